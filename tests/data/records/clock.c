// SPDX-License-Identifier: GPL-2.0
/* clock.c - a perf_event program for a cpu-clock event: on the first max_ticks ticks that land
 * in each task of the workload a `struct tick_record` (pid, tick number) goes to the ring buffer
 * `ticks`. The later ticks are not sent, so the records depend on the workload, not on timing, as
 * long as it spins long enough. max_ticks is a const volatile global. */
#include "records.h"
#include <linux/bpf_perf_event.h>

const volatile __u32 max_ticks = 10;

struct tick_record {
	__u32 pid;
	__u32 tick;
};

struct tick_record *unused_tick_record __attribute__((unused)); /* keeps the type in BTF */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} ticks SEC(".maps");

SEC("perf_event")
int on_tick(struct bpf_perf_event_data *ctx)
{
	struct tick_record r = { .pid = bpf_get_current_pid_tgid() >> 32 };
	__u64 seq;

	if (!is_workload())
		return 0;
	seq = next_seq(r.pid);
	if (seq >= max_ticks)
		return 0;
	r.tick = seq;
	bpf_ringbuf_output(&ticks, &r, sizeof(r), 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
