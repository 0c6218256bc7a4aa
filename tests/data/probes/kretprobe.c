// SPDX-License-Identifier: GPL-2.0
/* kretprobe.c - a libbpf-style kretprobe alone (tag 21: vfs_read returned). */
#include "probes.h"

SEC("kretprobe/vfs_read")
int on_read_return(void *ctx)
{
	return emit(ctx, 21, 0);
}
