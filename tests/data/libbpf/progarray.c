/* Item 4: a PROG_ARRAY with initial values: slots 1 and 3 hold programs after loading. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("socket")
int tail_a(void *ctx)
{
	return 1;
}

SEC("socket")
int tail_b(void *ctx)
{
	return 2;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, int (void *));
} es_jump SEC(".maps") = {
	.values = {
		[1] = (void *)&tail_a,
		[3] = (void *)&tail_b,
	},
};

SEC("socket")
int entry(void *ctx)
{
	bpf_tail_call(ctx, &es_jump, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
