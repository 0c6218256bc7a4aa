// SPDX-License-Identifier: GPL-2.0
/* ambiguous.c - a type vmlinux.c lacks and two modules lay out otherwise (nf_conntrack.c's
 * differs.z at 0, nf_nat.c's at 8): libbpf refuses such a relocation, and so must evspec
 * (tests/test_module_btf.py). Built with clang -target bpf -O2 -g; never loaded. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct differs___l { int z; } __attribute__((preserve_access_index));

SEC("tp/differs")
int differs(struct differs___l *d)
{
	return d->z;
}
char _license[] SEC("license") = "GPL";
