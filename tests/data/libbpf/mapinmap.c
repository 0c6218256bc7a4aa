/* Item 5: map-in-maps: the inner definition (__array(values, struct inner)) and initial values
 * that put other maps of the object into the outer ones. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 2);
};

struct inner es_in_a SEC(".maps"), es_in_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 3);
	__type(key, __u32);
	__array(values, struct inner);
} es_outer SEC(".maps") = {
	.values = { [0] = &es_in_a, [2] = &es_in_b },
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct inner);
} es_outer_hash SEC(".maps") = {
	.values = { [1] = &es_in_b },
};

SEC("socket")
int mim_prog(void *ctx)
{
	__u32 key = 0, *v;
	void *inner = bpf_map_lookup_elem(&es_outer, &key);

	if (!inner)
		return 0;
	v = bpf_map_lookup_elem(inner, &key);
	return v ? *v : 0;
}

char LICENSE[] SEC("license") = "GPL";
