/* Item 10: a program calling a global function of another program section: libbpf refuses the
 * call ("bad call relo"). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
__attribute__((noinline)) int other_prog(struct xdp_md *ctx)
{
	return ctx->data_end - ctx->data > 10 ? XDP_PASS : XDP_DROP;
}

SEC("socket")
int cross_caller(struct __sk_buff *skb)
{
	return other_prog((struct xdp_md *)skb);
}

char LICENSE[] SEC("license") = "GPL";
