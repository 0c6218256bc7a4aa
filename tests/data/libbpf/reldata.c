/* Review: a pointer in global data initialised with an address. clang leaves the address to a
 * relocation of the data section (.rel.data, .rel.rodata); libbpf skips those sections, so the map
 * holds the bytes the file holds there, never an address. KIND picks the pointer: 1 a map's
 * address, 2 a variable's (with an offset into it), 3 a function's, 4 string literals in .rodata;
 * 0 none (both loaders load the object alike). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef KIND
#define KIND 0
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, int);
} es_target SEC(".maps");

int es_values[4] = { 7, 8, 9, 10 };

__attribute__((noinline)) int es_fn(int x)
{
	return x + 1;
}

#if KIND == 1
void *es_ptr = &es_target;
#elif KIND == 2
int *es_ptr = &es_values[2];
#elif KIND == 3
int (*es_ptr)(int) = es_fn;
#elif KIND == 4
const char *const es_names[] = { "first", "second" };
#endif

SEC("socket")
int reldata_prog(struct __sk_buff *skb)
{
	return es_fn(es_values[skb->len & 3]);
}

char LICENSE[] SEC("license") = "GPL";
