// SPDX-License-Identifier: GPL-2.0
/* wide.c - a PERF_EVENT_ARRAY with more entries than any test machine has CPUs. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
	__uint(max_entries, 4096);
} wide SEC(".maps");

SEC("syscalls:sys_enter_clock_nanosleep")
int emit(void *ctx)
{
	char msg[] = "wide";

	bpf_perf_event_output(ctx, &wide, BPF_F_CURRENT_CPU, msg, sizeof(msg));
	return 0;
}

char _license[] SEC("license") = "GPL";
