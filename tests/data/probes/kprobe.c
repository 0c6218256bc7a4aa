// SPDX-License-Identifier: GPL-2.0
/* kprobe.c - a perf-style kprobe and a libbpf-style kretprobe (kprobe sections need no target.h). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("func=do_sys_openat2")
int on_open(void *ctx)
{
	return 0;
}

SEC("kretprobe/vfs_read")
int on_read_return(void *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
