// SPDX-License-Identifier: GPL-2.0
/* probes.h - what the probe test programs share: one record per hit, {tag, value}, sent to the
 * automatic __bpf_stdout__ event (or to the map a source names in OUTPUT_MAP). target.h is
 * written by the test: TARGET (the probed program's path), LIBC, and the pt_regs offsets of the
 * first argument and the return value. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "target.h"

#ifndef OUTPUT_MAP
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");
#define OUTPUT_MAP __bpf_stdout__
#endif

struct hit {
	__u64 tag;
	__u64 value;
};

static __always_inline __u64 reg_at(void *ctx, int offset)
{
	return *(__u64 *)((char *)ctx + offset);
}

static __always_inline int emit(void *ctx, __u64 tag, __u64 value)
{
	struct hit hit = { tag, value };

	bpf_perf_event_output(ctx, &OUTPUT_MAP, BPF_F_CURRENT_CPU, &hit, sizeof(hit));
	return 0;
}

char _license[] SEC("license") = "GPL";
