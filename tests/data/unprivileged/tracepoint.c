// SPDX-License-Identifier: GPL-2.0
/* tracepoint.c - a perf-style tracepoint program, recorded by a normal user. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	return 1;
}

char _license[] SEC("license") = "GPL";
