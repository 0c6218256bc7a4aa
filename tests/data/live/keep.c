// SPDX-License-Identifier: GPL-2.0
/* keep.c - programs that keep every tracepoint sample they see (return 1): the samples carry the
 * tracepoint's own fields, decoded from its tracefs format. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("syscalls:sys_enter_getppid")
int keep_getppid(void *ctx)
{
	return 1;
}

SEC("sched:sched_process_exec")
int keep_exec(void *ctx)
{
	return 1;
}

char _license[] SEC("license") = "GPL";
