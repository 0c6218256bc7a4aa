// SPDX-License-Identifier: GPL-2.0
/* emit.c - one 56-byte bpf-output record per getppid() call, through an automatic __bpf_stdout__. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

struct record {
	__u64 seq;
	char text[48];
};

SEC("syscalls:sys_enter_getppid")
int emit(void *ctx)
{
	struct record r = { .seq = 7, .text = "getppid record" };

	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &r, sizeof(r));
	return 0;
}

char _license[] SEC("license") = "GPL";
