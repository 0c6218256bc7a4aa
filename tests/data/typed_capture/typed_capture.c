// SPDX-License-Identifier: GPL-2.0
/* typed_capture.c - typed output maps captured with record -o (tests/test_typed_capture.py).
 *
 * The n-th getppid() of the task whose comm is targ_comm (var:targ_comm='NAME': the test's copy of
 * the workload, under a name of its own) puts a `struct sample` into __bpf_stdout__ (perf record's
 * automatic bpf-output event) and a `struct ring_rec` into the ring buffer `ring`: every record
 * says only n and constants, so two runs print the same fields. The sample is whole for n % 3 == 0,
 * cut to 20 bytes (in the middle of `tag`) for n % 3 == 1, and 8 bytes longer than the type for
 * n % 3 == 2. The sizes (36, 20, 44) leave no room for the kernel's padding: 4 + size is a multiple
 * of 8, so the raw data of each sample is its bytes exactly. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "workload.h" /* targ_comm, is_workload() */

enum state { ST_IDLE = 0, ST_BUSY = 3, ST_DONE = 7 };

struct pair {
	__u16 lo;
	__s8 delta;
};

struct sample {
	__u32 seq;
	enum state st;
	struct pair p;
	__s32 neg;
	char tag[8];
	__u16 vals[4];
	__u32 flags : 3, level : 5;
};

struct long_sample {
	struct sample s;
	__u32 extra[2];
};

struct ring_rec {
	__u32 seq;
	char what[12];
};

/* clang keeps in BTF only the types of globals and functions: these pointers keep the records' */
struct sample *unused_sample __attribute__((unused));
struct ring_rec *unused_ring_rec __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} ring SEC(".maps");

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
	struct long_sample out = {};
	struct ring_rec *r;
	__u32 n;

	if (!count || !is_workload())
		return 0;
	n = *count; /* the workload is one thread: no other call in between */
	__sync_fetch_and_add(count, 1);
	out.s.seq = n;
	out.s.st = n % 2 ? ST_BUSY : ST_DONE;
	out.s.p.lo = 1000 + n;
	out.s.p.delta = -3;
	out.s.neg = -(int)n;
	__builtin_memcpy(out.s.tag, "sample!", 8);
	out.s.vals[0] = 1;
	out.s.vals[1] = 2;
	out.s.vals[2] = n;
	out.s.vals[3] = 65535;
	out.s.flags = 5;
	out.s.level = 17;
	out.extra[0] = 0xdeadbeef;
	out.extra[1] = n;
	if (n % 3 == 0)
		bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &out, sizeof(out.s));
	else if (n % 3 == 1)
		bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &out, 20);
	else
		bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &out, sizeof(out));
	r = bpf_ringbuf_reserve(&ring, sizeof(*r), 0);
	if (r) {
		r->seq = n;
		__builtin_memcpy(r->what, "ring record", 12);
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}

char _license[] SEC("license") = "GPL";
