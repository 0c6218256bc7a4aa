// SPDX-License-Identifier: GPL-2.0
/* kernel_poisoned.c - reads a field the kernel's task_struct does not have, unguarded: the
 * instruction is poisoned, and the verifier refuses the program naming it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct task_struct___k { int pid; int no_such_field; } __attribute__((preserve_access_index));

SEC("raw_syscalls:sys_enter")
int poisoned(void *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task();

	return BPF_CORE_READ(t, pid) + BPF_CORE_READ(t, no_such_field);
}
char _license[] SEC("license") = "GPL";
