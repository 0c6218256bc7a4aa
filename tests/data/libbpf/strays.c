/* Review: code bytes that belong to no function symbol (raw words put into a section by
 * top-level asm). libbpf loads each FUNC symbol's bytes and drops the rest without a word. SECTION
 * picks where the stray instruction goes: 1 the program section, 2 .text; 0 nowhere. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef SECTION
#define SECTION 0
#endif

__attribute__((noinline)) int es_sub(int x)
{
	return x * 3;
}

SEC("socket")
int strays_prog(struct __sk_buff *skb)
{
	return es_sub(skb->len);
}

/* an exit instruction (opcode 0x95) */
#if SECTION == 1
asm(".pushsection socket,\"ax\",@progbits\n\t.quad 0x95\n\t.popsection");
#elif SECTION == 2
asm(".pushsection .text,\"ax\",@progbits\n\t.quad 0x95\n\t.popsection");
#endif

char LICENSE[] SEC("license") = "GPL";
