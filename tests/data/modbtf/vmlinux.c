// SPDX-License-Identifier: GPL-2.0
/* vmlinux.c - the base BTF of tests/test_module_btf.py, a kernel's vmlinux in small (built with
 * clang -target bpf -g -c; its .BTF section is the base the module BTFs are split on). */
struct list_head { struct list_head *next, *prev; };
struct task_struct {
	int pid;
	int tgid;
	struct list_head tasks;
	char comm[16];
};
struct in_both { int x; };	/* a module has its own in_both: vmlinux's is the only candidate */
typedef unsigned int in_modules;	/* no candidate of a struct in_modules: the modules are searched */
enum vm_state { VM_OFF = 0, VM_ON = 1 };

struct task_struct init_task;
struct in_both both;
enum vm_state state;
int vmlinux_counter;		/* a typed __ksym variable of vmlinux */
in_modules in_modules_count;

int bpf_vm_kfunc(struct task_struct *task, int flags)	/* a kfunc of vmlinux */
{
	return task->pid + flags;
}
