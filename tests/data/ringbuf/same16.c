// SPDX-License-Identifier: GPL-2.0
/* same16.c - the producer of bench/ringbuf_bench.py: every getppid() of the workload writes the
 * same 16-byte record (the task's pid/tgid, then "ring!") through one of three paths chosen at
 * build time: -DVIA_PERF (bpf_perf_event_output to __bpf_stdout__), -DVIA_OUTPUT
 * (bpf_ringbuf_output) or -DVIA_RESERVE (bpf_ringbuf_reserve + submit) into the ring buffer map
 * `events` (RINGBUF_BYTES). `counters` counts the records written (key 0) and the writes that
 * failed (key 1: a full ring). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef RINGBUF_BYTES
#define RINGBUF_BYTES (1 << 22)
#endif

#ifdef VIA_PERF
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");
#else
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RINGBUF_BYTES);
} events SEC(".maps");
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, int);
	__type(value, __u64);
} counters SEC(".maps");

struct record {
	__u64 id;
	char text[8];
};

SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	int written = 0, failed = 1;
	__u64 *n = bpf_map_lookup_elem(&counters, &written);
	__u64 *f = bpf_map_lookup_elem(&counters, &failed);
	long err;

	if (!n || !f)
		return 0;
#ifdef VIA_RESERVE
	struct record *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(f, 1);
		return 0;
	}
	r->id = bpf_get_current_pid_tgid();
	__builtin_memcpy(r->text, "ring!\0\0", 8);
	bpf_ringbuf_submit(r, 0);
	err = 0;
#else
	struct record r = { .id = bpf_get_current_pid_tgid() };

	__builtin_memcpy(r.text, "ring!\0\0", 8);
#ifdef VIA_PERF
	err = bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &r, sizeof(r));
#else
	err = bpf_ringbuf_output(&events, &r, sizeof(r), 0);
#endif
#endif
	__sync_fetch_and_add(err ? f : n, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
