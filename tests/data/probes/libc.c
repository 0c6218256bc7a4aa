// SPDX-License-Identifier: GPL-2.0
/* libc.c - perf-style uprobe on getpid in the C library the target is linked with. */
#include "probes.h"

SEC("exec=" LIBC ";probe=getpid")
int on_getpid(void *ctx)
{
	return emit(ctx, 6, 0);
}
