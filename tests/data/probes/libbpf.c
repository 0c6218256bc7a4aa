// SPDX-License-Identifier: GPL-2.0
/* libbpf.c - libbpf-style uprobe and uretprobe on probed_mul (attached through the uprobe PMU). */
#include "probes.h"

SEC("uprobe/" TARGET ":probed_mul")
int on_mul(void *ctx)
{
	return emit(ctx, 4, (int)reg_at(ctx, ARG0_OFFSET));
}

SEC("uretprobe/" TARGET ":probed_mul")
int on_mul_return(void *ctx)
{
	return emit(ctx, 5, (int)reg_at(ctx, RC_OFFSET));
}
