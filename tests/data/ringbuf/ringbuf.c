// SPDX-License-Identifier: GPL-2.0
/* ringbuf.c - every getppid() of the workload reserves a record in the ring buffer map `events`
 * (its count, then a string); every fourth is discarded instead of submitted. The count of calls
 * seen is kept in `calls` (an ARRAY map) and the reservations that failed in `dropped`. A
 * tracepoint program runs for every task's getppid(): only a task called "rbuf_reader" (the
 * tests' copy of getppid.c) counts. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RINGBUF_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, int);
	__type(value, __u64);
} counters SEC(".maps");

struct record {
	__u64 count;
	char text[8];
};

SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	int calls = 0, dropped = 1;
	__u64 *n = bpf_map_lookup_elem(&counters, &calls);
	struct record *r;
	char comm[16];

	if (!n)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	if (comm[0] != 'r' || comm[1] != 'b' || comm[2] != 'u' || comm[3] != 'f' || comm[4] != '_' || comm[5] != 'r' ||
	    comm[6] != 'e' || comm[7] != 'a' || comm[8] != 'd' || comm[9] != 'e' || comm[10] != 'r' || comm[11] != 0)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__u64 *d = bpf_map_lookup_elem(&counters, &dropped);
		if (d)
			__sync_fetch_and_add(d, 1);
		return 0;
	}
	r->count = *n;
	__builtin_memcpy(r->text, "ring!\0\0", 8);
	__sync_fetch_and_add(n, 1);
	if (r->count % 4 == 3)
		bpf_ringbuf_discard(r, 0);
	else
		bpf_ringbuf_submit(r, 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
