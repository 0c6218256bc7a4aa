// SPDX-License-Identifier: GPL-2.0
/* relocs.c - every CO-RE relocation kind over local flavours of types that target.c defines with
 * another layout (tests/test_core_resolve.py): members through an anonymous struct, a nested
 * struct, arrays, bitfields, a field that grew (u32 -> u64), a field the target lacks, enums and
 * the type relocations (clang 14 has no type_matches). Built with clang -target bpf -O2 -g; never loaded. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct inner___l { int x; int y; };
struct sample___l {
	int a;
	struct { int b; char c[8]; };
	struct inner___l in;
	unsigned int bf1:3, bf2:5;
	long arr[4];
	int gone;
	unsigned int grew;
} __attribute__((preserve_access_index));
enum color___l { RED___l = 0, GREEN___l = 1, BLUE___l = 2 };
struct absent___l { int z; } __attribute__((preserve_access_index));

SEC("tp/fields")
int fields(struct sample___l *s)
{
	return s->a + s->b + s->c[3] + s->in.y + s->arr[2] + s->grew;
}

SEC("tp/info")
int info(struct sample___l *s)
{
	return bpf_core_field_exists(s->gone) + bpf_core_field_exists(s->in.x) * 2 +
	       bpf_core_field_size(s->c) * 4 + __builtin_preserve_field_info(s->a, BPF_FIELD_SIGNED) * 8 +
	       bpf_core_field_size(s->arr[1]) * 16;
}

SEC("tp/bitfield")
int bitfield(struct sample___l *s)
{
	return BPF_CORE_READ_BITFIELD(s, bf2);
}

SEC("tp/types")
int types(void *ctx)
{
	return bpf_core_type_exists(struct sample___l) + bpf_core_type_size(struct sample___l) * 2 +
	       bpf_core_type_exists(struct absent___l) * 4 + bpf_core_type_id_kernel(struct sample___l) * 8;
}

SEC("tp/enums")
int enums(void *ctx)
{
	return bpf_core_enum_value_exists(enum color___l, BLUE___l) +
	       bpf_core_enum_value_exists(enum color___l, GREEN___l) * 2 +
	       bpf_core_enum_value(enum color___l, RED___l) * 4;
}

SEC("tp/missing")
int missing(struct sample___l *s)
{
	return s->gone;
}
char _license[] SEC("license") = "GPL";
