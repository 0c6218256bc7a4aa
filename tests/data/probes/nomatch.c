// SPDX-License-Identifier: GPL-2.0
/* nomatch.c - a perf-style uprobe whose glob matches no function of the target. */
#include "probes.h"

SEC("exec=" TARGET ";probe=nothing_*")
int on_nothing(void *ctx)
{
	return emit(ctx, 9, 0);
}
