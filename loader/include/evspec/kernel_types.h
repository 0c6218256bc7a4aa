/* SPDX-License-Identifier: MIT */
/*
 * The kernel's short integer names (u8 .. u64, s8 .. s64), as <linux/types.h> provides them
 * inside the kernel; evspec adds this directory to the include path of every .c it compiles.
 */
#ifndef EVSPEC_KERNEL_TYPES_H
#define EVSPEC_KERNEL_TYPES_H

#include <linux/types.h>

typedef __u8 u8;
typedef __s8 s8;
typedef __u16 u16;
typedef __s16 s16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;

#endif /* EVSPEC_KERNEL_TYPES_H */
