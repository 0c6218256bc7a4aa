// SPDX-License-Identifier: GPL-2.0
/* raise.c - the seed's "Raise a BPF event!" through an automatic __bpf_stdout__ event. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

SEC("syscalls:sys_enter_clock_nanosleep")
int raise_event(void *ctx)
{
	char msg[] = "Raise a BPF event!";

	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, msg, sizeof(msg));
	return 0;
}

char _license[] SEC("license") = "GPL";
