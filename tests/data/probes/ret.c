// SPDX-License-Identifier: GPL-2.0
/* ret.c - perf-style uretprobe on probed_add: one record per return with the return value. */
#include "probes.h"

SEC("exec=" TARGET ";probe=probed_add%return")
int on_add_return(void *ctx)
{
	return emit(ctx, 3, (int)reg_at(ctx, RC_OFFSET));
}
