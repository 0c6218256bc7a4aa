/* Review: a 64-bit map_extra. A BPF arena's map_extra is the user address it is mapped at, above
 * 4 GiB here. libbpf (1.4 and later) reads it from __ulong(map_extra, V), an enum of one
 * enumerator: clang 15 and later write it as an ENUM64; clang 14 writes an 8-byte ENUM whose value
 * is cut to 32 bits. Without EXTRA the map has no map_extra (libbpf 1.1 cannot read __ulong: the
 * test sets it with bpf_map__set_map_extra). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef __ulong
#define __ulong(name, val) enum { ___bpf_concat(__unique_value, __COUNTER__) = val } name
#endif
#define ES_MAP_TYPE_ARENA 33 /* BPF_MAP_TYPE_ARENA, newer than these headers */

struct {
	__uint(type, ES_MAP_TYPE_ARENA);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 4); /* pages */
#ifdef EXTRA
	__ulong(map_extra, EXTRA);
#endif
} es_arena SEC(".maps");

SEC("socket")
int arena_prog(struct __sk_buff *skb)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
