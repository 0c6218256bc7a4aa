/* Item 9: iproute2's struct bpf_elf_map in SEC("maps"); PINNING (-D) sets its pinning field
 * (PIN_GLOBAL_NS is 2). libbpf 1.x refuses every SEC("maps") definition. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef PINNING
#define PINNING 0
#endif

struct bpf_elf_map {
	__u32 type;
	__u32 size_key;
	__u32 size_value;
	__u32 max_elem;
	__u32 flags;
	__u32 id;
	__u32 pinning;
	__u32 inner_id;
	__u32 inner_idx;
};

struct bpf_elf_map es_legacy SEC("maps") = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.max_elem = 4,
	.pinning = PINNING,
};

SEC("socket")
int legacy_prog(void *ctx)
{
	__u32 key = 0, *v = bpf_map_lookup_elem(&es_legacy, &key);

	return v ? *v : 0;
}

char LICENSE[] SEC("license") = "GPL";
