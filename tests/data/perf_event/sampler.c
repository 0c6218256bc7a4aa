// SPDX-License-Identifier: GPL-2.0
/* sampler.c - a perf_event program: each time the event it is put on overflows (a cpu-clock tick
 * of the workload), it sends the current pid to __bpf_stdout__. */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

SEC("perf_event")
int on_tick(struct bpf_perf_event_data *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;

	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &pid, sizeof(pid));
	return 0;
}

char _license[] SEC("license") = "GPL";
