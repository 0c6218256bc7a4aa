// SPDX-License-Identifier: GPL-2.0
/* nf_nat.c - a second module for tests/test_module_btf.py (re-based onto vmlinux.c's BTF like
 * nf_conntrack.c): a struct both modules lay out alike, one they lay out otherwise, a kfunc. */
struct in_modules { int pad; int y; };
struct differs { long pad; int z; };
struct nf_nat_range { unsigned int flags; unsigned short min_port, max_port; };

struct in_modules in_modules;
struct differs differs;
struct nf_nat_range range;

int bpf_nat_flags(struct nf_nat_range *range)	/* a kfunc of this module */
{
	return range->flags;
}
