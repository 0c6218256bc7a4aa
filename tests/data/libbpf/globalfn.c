/* Item 8: a program calling a global function (checked on its own by the verifier, which needs
 * the func info to know it is global). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__attribute__((noinline)) int global_fn(int x)
{
	return x + 1;
}

SEC("socket")
int global_prog(struct __sk_buff *skb)
{
	return global_fn(skb->len);
}

char LICENSE[] SEC("license") = "GPL";
