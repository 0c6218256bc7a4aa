// SPDX-License-Identifier: GPL-2.0
/* raise2.c - a second object writing to its own __bpf_stdout__ (on the exit tracepoint). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

SEC("syscalls:sys_exit_clock_nanosleep")
int raise_exit(void *ctx)
{
	char msg[] = "second object";

	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, msg, sizeof(msg));
	return 0;
}

char _license[] SEC("license") = "GPL";
