// SPDX-License-Identifier: GPL-2.0
/* capture.c - the producer of tests/test_ringbuf_capture.py: call n of getppid() by the workload
 * (n counted from 0 in `counters` key 0) writes
 *   - to the ring buffer map `events`, by n % 3: 0 a reserved 16-byte struct rec16 (n, "ring!"),
 *     1 a 13-byte bpf_ringbuf_output (n, then "odd!" and its NUL), 2 a reserved 40-byte
 *     struct rec40 (n, "a forty-byte ring buffer record"); a reserved record of a call with
 *     n % 4 == 3 is discarded instead of submitted;
 *   - to the ring buffer map `texts`, when n is even: the 14-byte string "ring buffer 2"
 *     (a BPF string for perf script);
 *   - to __bpf_stdout__ (a perf ring), when n % 5 == 0: n as 8 bytes.
 * Writes that fail (a full ring) are counted in `counters` key 1. A tracepoint program runs for
 * every task's getppid(), so only a task called "rbuf_capture" (the test's copy of getppid.c)
 * counts. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} texts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, int);
	__type(value, __u64);
} counters SEC(".maps");

struct rec16 {
	__u64 n;
	char text[8];
};

struct rec40 {
	__u64 n;
	char text[32];
};

SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	int calls = 0, failed = 1;
	__u64 *count = bpf_map_lookup_elem(&counters, &calls);
	__u64 *fails = bpf_map_lookup_elem(&counters, &failed);
	__u64 n;
	long err = 0;

	char comm[16];

	if (!count || !fails)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	if (comm[0] != 'r' || comm[1] != 'b' || comm[2] != 'u' || comm[3] != 'f' || comm[4] != '_' || comm[5] != 'c' ||
	    comm[6] != 'a' || comm[7] != 'p' || comm[8] != 't' || comm[9] != 'u' || comm[10] != 'r' || comm[11] != 'e' ||
	    comm[12] != 0)
		return 0;
	n = __sync_fetch_and_add(count, 1);
	if (n % 3 == 0) {
		struct rec16 *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

		if (!r) {
			err = -1;
		} else {
			r->n = n;
			__builtin_memcpy(r->text, "ring!\0\0", 8);
			if (n % 4 == 3)
				bpf_ringbuf_discard(r, 0);
			else
				bpf_ringbuf_submit(r, 0);
		}
	} else if (n % 3 == 1) {
		char odd[13];

		__builtin_memcpy(odd, &n, 8);
		__builtin_memcpy(odd + 8, "odd!", 5);
		err = bpf_ringbuf_output(&events, odd, sizeof(odd), 0);
	} else {
		struct rec40 *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

		if (!r) {
			err = -1;
		} else {
			r->n = n;
			__builtin_memcpy(r->text, "a forty-byte ring buffer record", 32);
			if (n % 4 == 3)
				bpf_ringbuf_discard(r, 0);
			else
				bpf_ringbuf_submit(r, 0);
		}
	}
	if (err)
		__sync_fetch_and_add(fails, 1);
	if (n % 2 == 0 && bpf_ringbuf_output(&texts, "ring buffer 2", 14, 0))
		__sync_fetch_and_add(fails, 1);
	if (n % 5 == 0 && bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &n, sizeof(n)))
		__sync_fetch_and_add(fails, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
