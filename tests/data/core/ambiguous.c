// SPDX-License-Identifier: GPL-2.0
/* ambiguous.c - a target BTF with two flavours of struct sample that place 'a' differently. */
struct sample { int a; };
struct sample___2 { long x; int a; };
struct sample s1;
struct sample___2 s2;
