// SPDX-License-Identifier: GPL-2.0
/* nf_conntrack.c - a kernel module's types for tests/test_module_btf.py: its BTF is re-based onto
 * vmlinux.c's (tests/split_btf.py), as pahole writes /sys/kernel/btf/nf_conntrack: the types that
 * vmlinux has alike (list_head, task_struct, int) become references into the base, the others
 * take ids after the base's last one. */
struct list_head { struct list_head *next, *prev; };
struct task_struct {
	int pid;
	int tgid;
	struct list_head tasks;
	char comm[16];
};
struct nf_conn {
	unsigned long status;
	struct task_struct *owner;
	unsigned int mark;
	struct list_head node;
};
struct in_both { long pad; int x; };		/* never a candidate: vmlinux has an in_both */
struct in_modules { int pad; int y; };		/* nf_nat has it too, laid out alike */
struct differs { int z; };			/* nf_nat has it laid out otherwise */
enum ip_conntrack_status { IPS_EXPECTED = 1, IPS_SEEN_REPLY = 2, IPS_CONFIRMED = 8 };

struct nf_conn conn;
struct in_both both;
struct in_modules in_modules;
struct differs differs;
enum ip_conntrack_status status;
unsigned int nf_conntrack_count;	/* a typed __ksym variable of the module */

int bpf_ct_set_mark(struct nf_conn *ct, unsigned int mark)	/* a kfunc of the module */
{
	ct->mark = mark;
	return 0;
}
