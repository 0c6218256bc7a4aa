/* Item 6: a static function placed in a program section: libbpf refuses it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline, section("socket"))) int local_fn(int x)
{
	return x * 3;
}

SEC("socket")
int static_caller(struct __sk_buff *skb)
{
	return local_fn(skb->len);
}

char LICENSE[] SEC("license") = "GPL";
