// SPDX-License-Identifier: GPL-2.0
/* pmu.c - libbpf.c's probes writing to a one-slot event array 'out', for a recording on CPU 0. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
	__uint(max_entries, 1);
} out SEC(".maps");

#define OUTPUT_MAP out
#include "libbpf.c"
