// SPDX-License-Identifier: GPL-2.0
/* externs.c - typed __ksym variables and kfuncs of tests/test_module_btf.py, found as libbpf finds
 * them: in vmlinux.c's BTF, else in the first module BTF that has them (nf_conntrack.c, nf_nat.c).
 * Module kfunc calls are numbered by module into the program's fd_array in the order they are
 * first resolved. Built with clang -target bpf -O2 -g; never loaded. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct task_struct { int pid; };	/* any struct: the kernel's prototypes are compared as */
struct nf_conn { int mark; };		/* bpf_core_types_are_compat compares them (a forward */
struct nf_nat_range { int flags; };	/* declaration would not match the kernel's struct) */

extern int vmlinux_counter __ksym;			/* vmlinux's */
extern unsigned int nf_conntrack_count __ksym;		/* module nf_conntrack's */
extern int bpf_vm_kfunc(struct task_struct *task, int flags) __ksym;	/* vmlinux's */
extern int bpf_nat_flags(struct nf_nat_range *range) __ksym;		/* module nf_nat's */
extern int bpf_ct_set_mark(struct nf_conn *ct, unsigned int mark) __ksym;	/* module nf_conntrack's */
extern int bpf_nowhere(void) __ksym __weak;				/* nobody's */

SEC("tp/externs")
int externs(void *ctx)
{
	int ret = vmlinux_counter + nf_conntrack_count;

	ret += bpf_vm_kfunc(0, 1) + bpf_nat_flags(0) + bpf_ct_set_mark(0, 2) + bpf_ct_set_mark(0, 3);
	if (bpf_nowhere)
		ret += bpf_nowhere();
	return ret;
}
char _license[] SEC("license") = "GPL";
