// SPDX-License-Identifier: GPL-2.0
/* kprobe.c - a perf-style kprobe and a libbpf-style kretprobe, each sending one record per hit
 * (tag 20: do_sys_openat2 entered, tag 21: vfs_read returned). */
#include "probes.h"

SEC("func=do_sys_openat2")
int on_open(void *ctx)
{
	return emit(ctx, 20, 0);
}

SEC("kretprobe/vfs_read")
int on_read_return(void *ctx)
{
	return emit(ctx, 21, 0);
}
