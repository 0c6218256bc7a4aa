// SPDX-License-Identifier: GPL-2.0
/* raw_sys.c - a raw tracepoint on sys_enter (system-wide): each syscall of the workload sends a
 * `struct sys_record` (the pid, and the syscall's id from the raw arguments: args[1]) to the ring
 * buffer `syscalls` with bpf_ringbuf_output. */
#include "records.h"

struct sys_record {
	__u32 pid;
	__u32 id;
};

struct sys_record *unused_sys_record __attribute__((unused)); /* keeps the type in BTF */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} syscalls SEC(".maps");

SEC("raw_tp/sys_enter")
int on_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	struct sys_record r = { .pid = bpf_get_current_pid_tgid() >> 32, .id = ctx->args[1] };

	if (is_workload())
		bpf_ringbuf_output(&syscalls, &r, sizeof(r), 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
