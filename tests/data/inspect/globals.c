// SPDX-License-Identifier: GPL-2.0
/* globals.c - global variables of every kind var: terms set, with values of their own, for the
 * inspect report's golden files: const volatile ones in .rodata, initialised ones in .data, zero
 * ones in .bss; integers of both signs, a bool, an enum, a char array, a float, a struct and a
 * pointer (which var: refuses, but inspect lists). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

enum mode { MODE_OFF, MODE_COUNT, MODE_TRACE };
struct limits { int low; int high; };

const volatile __u32 targ_pid = 42;
const volatile __s8 delta = -5;
const volatile _Bool targ_failed = 1;
const volatile enum mode mode = MODE_COUNT;
const volatile char targ_comm[16] = "bash";
const volatile struct limits limits = { .low = -1, .high = 100 };
double ratio = 0.25;            /* .data */
__u32 seed = 7;                 /* .data */
__u64 calls;                    /* .bss */
int *where;                     /* .bss */

SEC("raw_syscalls:sys_enter")
int on_enter(void *ctx)
{
	if (targ_pid && (bpf_get_current_pid_tgid() >> 32) != targ_pid)
		return 0;
	if (targ_comm[0] == 'x' || targ_failed || mode == MODE_TRACE || limits.high < delta)
		calls++;
	seed += *(volatile __u32 *)&ratio + (where != 0);  /* BPF has no float arithmetic */
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
