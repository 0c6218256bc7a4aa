/* Items 2 and 11: a bloom filter with map_extra (its number of hashes) and no key: libbpf passes
 * map_extra and the value's BTF type. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_BLOOM_FILTER);
	__type(value, __u32);
	__uint(max_entries, 64);
	__uint(map_extra, 3);
} es_bloom SEC(".maps");

SEC("socket")
int bloom_prog(void *ctx)
{
	__u32 value = 7;

	return bpf_map_peek_elem(&es_bloom, &value) == 0;
}

char LICENSE[] SEC("license") = "GPL";
