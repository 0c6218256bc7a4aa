// SPDX-License-Identifier: GPL-2.0
/* filtered.c - a perf-style uprobe program that filters its probe's own samples: it lets one
 * through (returns 1) for an odd first argument of probed_add, and drops it (returns 0) for an
 * even one. It emits nothing. */
#include "probes.h"

SEC("exec=" TARGET ";probe=probed_add")
int odd_only(void *ctx)
{
	return (int)reg_at(ctx, ARG0_OFFSET) & 1;
}
