// SPDX-License-Identifier: GPL-2.0
/* core_fields.c - bench/core_bench.py's object: one program reading some 30 fields (about 50 relocations) of the
 * running kernel's task_struct, mm_struct, cred, signal_struct, nsproxy, file, inode and friends
 * through local flavours with BPF_CORE_READ, each read a CO-RE relocation to resolve. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct qstr___b { unsigned int len; const unsigned char *name; } __attribute__((preserve_access_index));
struct super_block___b { unsigned long s_blocksize; unsigned long s_magic; unsigned int s_dev; }
	__attribute__((preserve_access_index));
struct inode___b { unsigned short i_mode; unsigned long i_ino; unsigned int i_nlink; long long i_size;
	unsigned int i_flags; struct super_block___b *i_sb; } __attribute__((preserve_access_index));
struct dentry___b { struct qstr___b d_name; struct inode___b *d_inode; struct dentry___b *d_parent; }
	__attribute__((preserve_access_index));
struct path___b { struct dentry___b *dentry; } __attribute__((preserve_access_index));
struct file___b { unsigned int f_flags; unsigned int f_mode; long long f_pos; struct path___b f_path;
	struct inode___b *f_inode; } __attribute__((preserve_access_index));
struct mm_struct___b { unsigned long start_code; unsigned long end_code; unsigned long start_data;
	unsigned long end_data; unsigned long start_brk; unsigned long brk; unsigned long start_stack;
	unsigned long arg_start; unsigned long arg_end; unsigned long env_start; unsigned long env_end;
	unsigned long total_vm; unsigned long locked_vm; unsigned long data_vm; unsigned long exec_vm;
	unsigned long stack_vm; unsigned long task_size; struct file___b *exe_file; }
	__attribute__((preserve_access_index));
struct kuid___b { unsigned int val; } __attribute__((preserve_access_index));
struct cred___b { struct kuid___b uid; struct kuid___b euid; struct kuid___b suid; struct kuid___b fsuid;
	unsigned int securebits; } __attribute__((preserve_access_index));
struct signal_struct___b { int nr_threads; int group_exit_code; } __attribute__((preserve_access_index));
struct uts_namespace___b { unsigned int ns_dummy; } __attribute__((preserve_access_index));
struct nsproxy___b { struct uts_namespace___b *uts_ns; } __attribute__((preserve_access_index));
struct sched_entity___b { unsigned long long vruntime; unsigned long long sum_exec_runtime; }
	__attribute__((preserve_access_index));
struct task_struct___b { int pid; int tgid; unsigned int flags; int prio; int static_prio; int normal_prio;
	unsigned int policy; int exit_code; int exit_signal; unsigned long nvcsw; unsigned long nivcsw;
	unsigned long long start_time; unsigned long min_flt; unsigned long maj_flt; char comm[16];
	struct sched_entity___b se; struct mm_struct___b *mm; struct task_struct___b *real_parent;
	struct task_struct___b *group_leader; const struct cred___b *cred; struct signal_struct___b *signal;
	struct nsproxy___b *nsproxy; } __attribute__((preserve_access_index));

SEC("tracepoint/raw_syscalls/sys_enter")  /* a name libbpf (bpftool) reads too */
int many_fields(void *ctx)
{
	struct task_struct___b *t = (void *)bpf_get_current_task();
	unsigned long v = 0;

	v += BPF_CORE_READ(t, pid) + BPF_CORE_READ(t, tgid) + BPF_CORE_READ(t, flags);
	v += BPF_CORE_READ(t, prio) + BPF_CORE_READ(t, static_prio) + BPF_CORE_READ(t, normal_prio);
	v += BPF_CORE_READ(t, policy) + BPF_CORE_READ(t, exit_code) + BPF_CORE_READ(t, exit_signal);
	v += BPF_CORE_READ(t, nvcsw) + BPF_CORE_READ(t, nivcsw) + BPF_CORE_READ(t, start_time);
	v += BPF_CORE_READ(t, min_flt) + BPF_CORE_READ(t, maj_flt);
	v += BPF_CORE_READ(t, se.vruntime) + BPF_CORE_READ(t, se.sum_exec_runtime);
	v += BPF_CORE_READ(t, real_parent, pid) + BPF_CORE_READ(t, group_leader, tgid);
	v += BPF_CORE_READ(t, mm, start_code) + BPF_CORE_READ(t, mm, end_code);
	v += BPF_CORE_READ(t, mm, exe_file, f_flags) + BPF_CORE_READ(t, mm, exe_file, f_mode);
	v += BPF_CORE_READ(t, mm, exe_file, f_inode, i_ino) + BPF_CORE_READ(t, mm, exe_file, f_inode, i_size);
	v += BPF_CORE_READ(t, mm, exe_file, f_inode, i_mode) + BPF_CORE_READ(t, mm, exe_file, f_inode, i_nlink);
	v += BPF_CORE_READ(t, mm, exe_file, f_inode, i_sb, s_blocksize);
	v += BPF_CORE_READ(t, mm, exe_file, f_path.dentry, d_name.len);
	v += BPF_CORE_READ(t, cred, uid.val) + BPF_CORE_READ(t, cred, euid.val);
	v += BPF_CORE_READ(t, cred, suid.val) + BPF_CORE_READ(t, cred, fsuid.val) + BPF_CORE_READ(t, cred, securebits);
	v += BPF_CORE_READ(t, signal, nr_threads) + BPF_CORE_READ(t, signal, group_exit_code);
	v += bpf_core_field_exists(t->nsproxy) + bpf_core_field_size(t->comm) + bpf_core_type_size(struct task_struct___b);
	return v & 0xff;
}
char _license[] SEC("license") = "GPL";
