/* Item 7: a __hidden global subprogram. libbpf makes its BTF FUNC static, so the verifier checks
 * it with its caller's context: *p is a known stack slot. Checked as a global function, p could
 * be NULL and the load would fail. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__hidden __attribute__((noinline)) int hidden_fn(int *p)
{
	return *p + 1;
}

SEC("socket")
int hidden_prog(struct __sk_buff *skb)
{
	int x = skb->len;

	return hidden_fn(&x);
}

char LICENSE[] SEC("license") = "GPL";
