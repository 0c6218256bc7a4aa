// SPDX-License-Identifier: GPL-2.0
/* tp_perf.c - a tracepoint program with perf event array output: on each return from getppid()
 * of the workload a `struct ret_record` (pid, the per-task sequence number, and what getppid
 * returned: the parent's pid) goes to the perf event array `samples` (bpf_perf_event_output).
 * Built with -DPERF_STYLE, the section is perf's name of the tracepoint, which perf 6.1 attaches. */
#include "records.h"

struct sys_exit_ctx { /* the fields of syscalls:sys_exit_getppid, as its tracefs format has them */
	__u64 common;
	int nr;
	long ret;
};

struct ret_record {
	__u32 pid;
	__u32 ret;
	__u64 seq;
};

struct ret_record *unused_ret_record __attribute__((unused)); /* keeps the type in BTF */

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} samples SEC(".maps");

#ifdef PERF_STYLE
SEC("syscalls:sys_exit_getppid")
#else
SEC("tracepoint/syscalls/sys_exit_getppid")
#endif
int on_getppid_exit(struct sys_exit_ctx *ctx)
{
	struct ret_record r = { .pid = bpf_get_current_pid_tgid() >> 32, .ret = ctx->ret };

	if (!is_workload())
		return 0;
	r.seq = next_seq(r.pid);
	bpf_perf_event_output(ctx, &samples, BPF_F_CURRENT_CPU, &r, sizeof(r));
	return 0;
}

char _license[] SEC("license") = "GPL";
