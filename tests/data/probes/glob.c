// SPDX-License-Identifier: GPL-2.0
/* glob.c - perf-style uprobe on the glob probed_*: one probe per matching function. */
#include "probes.h"

SEC("exec=" TARGET ";probe=probed_*")
int on_any(void *ctx)
{
	return emit(ctx, 2, (int)reg_at(ctx, ARG0_OFFSET));
}
