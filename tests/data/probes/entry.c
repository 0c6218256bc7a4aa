// SPDX-License-Identifier: GPL-2.0
/* entry.c - perf-style uprobe on probed_add: one record per call with its first argument. */
#include "probes.h"

SEC("exec=" TARGET ";probe=probed_add")
int on_add(void *ctx)
{
	return emit(ctx, 1, (int)reg_at(ctx, ARG0_OFFSET));
}
