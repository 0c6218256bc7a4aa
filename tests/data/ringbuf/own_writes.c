// SPDX-License-Identifier: GPL-2.0
/* own_writes.c - every write(2) of every task into a ring buffer, as {tgid, comm}: it would see
 * the recording's own writes of what it prints, which it must never print. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} writes SEC(".maps");

struct write_rec {
	__u32 tgid;
	char comm[16];
};

SEC("tracepoint/syscalls/sys_enter_write")
int on_write(void *ctx)
{
	struct write_rec *r = bpf_ringbuf_reserve(&writes, sizeof(*r), 0);

	if (!r)
		return 0;
	r->tgid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	bpf_ringbuf_submit(r, 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
