// SPDX-License-Identifier: GPL-2.0
/* uprobe.c - a libbpf-style uprobe on the C library's getppid, recorded by a normal user
 * (LIBC is given with -D). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("uprobe/" LIBC ":getppid")
int on_getppid(void *ctx)
{
	return 1;
}

char _license[] SEC("license") = "GPL";
