// SPDX-License-Identifier: GPL-2.0
/* autoload.c - two programs on the workload's getppid() calls: 'off' in a SEC("?...") section
 * (libbpf's autoload-off convention: loaded, never attached) would send 1, 'on' sends 2. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

static __always_inline int send(void *ctx, __u64 tag)
{
	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &tag, sizeof(tag));
	return 0;
}

SEC("?tracepoint/syscalls/sys_enter_getppid")
int off(void *ctx)
{
	return send(ctx, 1);
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int on(void *ctx)
{
	return send(ctx, 2);
}

char _license[] SEC("license") = "GPL";
