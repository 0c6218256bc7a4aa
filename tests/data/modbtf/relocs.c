// SPDX-License-Identifier: GPL-2.0
/* relocs.c - CO-RE relocations of tests/test_module_btf.py against vmlinux.c's BTF and the module
 * BTFs split on it (nf_conntrack.c, nf_nat.c): types vmlinux has (resolved there, the modules never
 * read), types only a module has (resolved in it, with its split ids), a type both have (vmlinux's
 * wins), one two modules have alike, a field the module lacks (poisoned, the module named), a type
 * nobody has. Built with clang -target bpf -O2 -g; never loaded. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct task_struct___l { int tgid; char comm[16]; } __attribute__((preserve_access_index));
struct nf_conn___l {
	unsigned int mark;
	unsigned long status;
	struct task_struct___l *owner;
} __attribute__((preserve_access_index));
struct nf_conn___old { int gone; } __attribute__((preserve_access_index));
struct in_both___l { int x; } __attribute__((preserve_access_index));
struct in_modules___l { int y; } __attribute__((preserve_access_index));
struct nowhere___l { int q; } __attribute__((preserve_access_index));
enum ip_conntrack_status___l { IPS_CONFIRMED___l = 0, IPS_GONE___l = 1 };

SEC("tp/vmlinux")
int vmlinux(struct task_struct___l *t)
{
	return t->tgid + t->comm[1];
}

SEC("tp/module")
int module(struct nf_conn___l *ct)
{
	return ct->mark + ct->status + ct->owner->tgid;
}

SEC("tp/types")
int types(void *ctx)
{
	return bpf_core_type_exists(struct nf_conn___l) + bpf_core_type_size(struct nf_conn___l) * 2 +
	       bpf_core_type_id_kernel(struct nf_conn___l) * 4 + bpf_core_type_exists(struct nowhere___l) * 8;
}

SEC("tp/enums")
int enums(void *ctx)
{
	return bpf_core_enum_value(enum ip_conntrack_status___l, IPS_CONFIRMED___l) +
	       bpf_core_enum_value_exists(enum ip_conntrack_status___l, IPS_GONE___l) * 2;
}

SEC("tp/both")
int both(struct in_both___l *b, struct in_modules___l *m)
{
	return b->x + m->y;
}

SEC("tp/missing")
int missing(struct nf_conn___old *ct, struct nowhere___l *n)
{
	return ct->gone + n->q;
}
char _license[] SEC("license") = "GPL";
