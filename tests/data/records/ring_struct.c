// SPDX-License-Identifier: GPL-2.0
/* ring_struct.c - a ring buffer of structs with a nested struct, a union and a string: each
 * openat() of the workload reserves a `struct open_record` in the ring buffer `opens` (the pid,
 * the per-task sequence number, the call's dfd and flags, the path read from the caller's memory);
 * records with an odd sequence number are discarded instead of submitted. */
#include "records.h"

struct sys_enter_openat_ctx { /* the fields of syscalls:sys_enter_openat, as its tracefs format has them */
	__u64 common;
	int nr;
	__u64 dfd;
	const char *filename;
	__u64 flags;
	__u64 mode;
};

struct open_record {
	__u32 pid;
	struct {
		__s32 dfd;
		__u32 flags;
		__u16 mode;
		__u8 kind;
		__u8 version;
	} call;
	union {
		__u64 seq;
		__u8 seq_bytes[8];
	} n;
	char path[64];
};

struct open_record *unused_open_record __attribute__((unused)); /* keeps the type in BTF */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} opens SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_openat")
int on_openat(struct sys_enter_openat_ctx *ctx)
{
	struct open_record *r;

	if (!is_workload())
		return 0;
	r = bpf_ringbuf_reserve(&opens, sizeof(*r), 0);
	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r)); /* reserved space holds older records' bytes */
	r->pid = bpf_get_current_pid_tgid() >> 32;
	r->call.dfd = ctx->dfd;
	r->call.flags = ctx->flags;
	r->call.mode = ctx->mode;
	r->call.kind = 1;
	r->call.version = 2;
	r->n.seq = next_seq(r->pid);
	bpf_probe_read_user_str(r->path, sizeof(r->path), ctx->filename);
	if (r->n.seq % 2)
		bpf_ringbuf_discard(r, 0);
	else
		bpf_ringbuf_submit(r, 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
