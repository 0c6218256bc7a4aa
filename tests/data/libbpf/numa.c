/* Item 3: a map on a NUMA node (NODE, -D; node 0 always exists, 63 does not here). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef NODE
#define NODE 0
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 8);
	__uint(map_flags, BPF_F_NUMA_NODE);
	__uint(numa_node, NODE);
} es_numa SEC(".maps");

SEC("socket")
int numa_prog(void *ctx)
{
	__u32 key = 0, *v = bpf_map_lookup_elem(&es_numa, &key);

	return v ? *v : 0;
}

char LICENSE[] SEC("license") = "GPL";
