// SPDX-License-Identifier: GPL-2.0
/* args.c - perf-style uprobe on the glob probed_* fetching the named parameter 'a' (DWARF) through
 * an argument prologue: both functions keep 'a' in the same register, so they share one program. */
#include "probes.h"

SEC("exec=" TARGET ";probe=probed_* a")
int on_args(void *ctx, long err, long a)
{
	return emit(ctx, err ? 0xe : 7, (int)a);
}
