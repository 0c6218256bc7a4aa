// SPDX-License-Identifier: GPL-2.0
/* second.c - the second object of tests/test_typed_capture.py: its own BTF, with a `struct sample`
 * of another layout than typed_capture.c's (the capture must name the BTF object as well as the
 * type). The n-th getppid() of the task whose comm is targ_comm puts a `struct sample` into the
 * perf event array `outs` (the test stores a bpf-output event of its own there), a `struct note`
 * into the ring buffer `notes`, and 8 untyped bytes into the perf event array `plain`. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "workload.h" /* targ_comm, is_workload() */

struct sample {
	__u32 seq;
	__u32 square;
	__u32 cube;
};

struct note {
	__u64 n;
	char who[8];
};

struct sample *unused_sample __attribute__((unused));
struct note *unused_note __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} outs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} plain SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} notes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, __u32);
} calls SEC(".maps");

SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	int zero = 0;
	__u32 *count = bpf_map_lookup_elem(&calls, &zero);
	struct sample s;
	struct note *note;
	__u64 raw;
	__u32 n;

	if (!count || !is_workload())
		return 0;
	n = *count; /* the workload is one thread: no other call in between */
	__sync_fetch_and_add(count, 1);
	s.seq = n;
	s.square = n * n;
	s.cube = n * n * n;
	bpf_perf_event_output(ctx, &outs, BPF_F_CURRENT_CPU, &s, sizeof(s));
	raw = 0x0102030405060700ULL | n;
	bpf_perf_event_output(ctx, &plain, BPF_F_CURRENT_CPU, &raw, 4);
	note = bpf_ringbuf_reserve(&notes, sizeof(*note), 0);
	if (note) {
		note->n = n;
		__builtin_memcpy(note->who, "second", 7);
		bpf_ringbuf_submit(note, 0);
	}
	return 0;
}

char _license[] SEC("license") = "GPL";
