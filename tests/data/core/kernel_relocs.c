// SPDX-License-Identifier: GPL-2.0
/* kernel_relocs.c - CO-RE relocations against the running kernel's types, through local
 * flavours (tests/test_core_kernel.py loads each program twice: relocated by evspec, and with
 * the raw records given to BPF_PROG_LOAD for the kernel to apply; the translated programs must
 * be equal). Fields, a nested struct, an array element, a bitfield, existence (a missing field,
 * guarded), sizes, signedness, types, enums, and a subprogram with relocations of its own. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct sched_entity___k { unsigned long long vruntime; } __attribute__((preserve_access_index));
struct task_struct___k {
	int pid;
	int tgid;
	char comm[16];
	unsigned int flags;
	struct sched_entity___k se;
	unsigned int in_execve:1;
	int no_such_field;
} __attribute__((preserve_access_index));
enum pid_type___k { PIDTYPE_PID___k, PIDTYPE_TGID___k, PIDTYPE_NONE___k = 42 };
struct not_in_any_kernel___k { int x; };

static __attribute__((noinline)) int comm_char(struct task_struct___k *t, int salt)
{
	char c = 0;

	bpf_core_read(&c, sizeof(c), &t->comm[3]);
	return c + salt + bpf_core_field_size(t->comm);
}

SEC("raw_syscalls:sys_enter")
int fields(void *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task();
	long v = BPF_CORE_READ(t, pid) + BPF_CORE_READ(t, tgid) + BPF_CORE_READ(t, flags);

	v += BPF_CORE_READ(t, se.vruntime) & 0xff;
	v += comm_char(t, 7);
	return v;
}

SEC("raw_syscalls:sys_enter")
int bitfield(void *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task();

	return BPF_CORE_READ_BITFIELD_PROBED(t, in_execve);
}

SEC("raw_syscalls:sys_enter")
int info(void *ctx)
{
	struct task_struct___k *t = (void *)bpf_get_current_task();
	long v = 0;

	if (bpf_core_field_exists(t->no_such_field))
		v += BPF_CORE_READ(t, no_such_field);
	v += bpf_core_field_exists(t->pid) + bpf_core_field_size(t->flags) * 2 +
	     __builtin_preserve_field_info(t->pid, BPF_FIELD_SIGNED) * 4;
	v += bpf_core_type_exists(struct task_struct___k) + bpf_core_type_size(struct task_struct___k) +
	     bpf_core_type_exists(struct not_in_any_kernel___k) * 8 +
	     bpf_core_type_id_kernel(struct task_struct___k);
	v += bpf_core_enum_value_exists(enum pid_type___k, PIDTYPE_NONE___k) * 16 +
	     bpf_core_enum_value(enum pid_type___k, PIDTYPE_TGID___k) * 32 +
	     comm_char(t, 1);
	return v;
}
char _license[] SEC("license") = "GPL";
