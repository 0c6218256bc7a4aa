/* Review: a callback's address (ld_imm64 of a function, here for bpf_loop). libbpf takes the
 * address of a function in .text only; of a program in another section (CALLBACK_IN_XDP=1) it
 * refuses ("bad map relo"). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#if CALLBACK_IN_XDP
SEC("xdp")
#else
static __attribute__((noinline))
#endif
int es_callback(__u32 index, void *ctx)
{
	return 0;
}

SEC("socket")
int fnaddr_prog(struct __sk_buff *skb)
{
	bpf_loop(2, es_callback, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
