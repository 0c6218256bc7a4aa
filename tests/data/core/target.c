// SPDX-License-Identifier: GPL-2.0
/* target.c - the target BTF of tests/test_core_resolve.py: the types relocs.c relocates, laid out
 * otherwise (built with clang -target bpf -g -c; its .BTF section is the target). */
struct inner { int pad; int x; int y; };
struct sample {
	long first;
	int a;
	union { struct { int pad2; int b; char c[16]; }; };
	struct inner in;
	unsigned int pad3:2, bf1:3, bf2:7;
	long arr[8];
	unsigned long grew;
};
enum color { GREEN = 10, RED = 20 };
struct sample s;
enum color c;
