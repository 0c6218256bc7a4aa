/* Review: a bpf-to-bpf call without a relocation (what older LLVM emitted for a call inside one
 * section, here written as raw words). Its imm alone names the target; TARGET picks it: 0 the start
 * of es_callee (both loaders call es_callee), 1 the second instruction of es_callee (libbpf calls
 * the function that contains the target, from its start), 2 the start of the calling function
 * itself (a recursive call: the verifier refuses it), 3 an instruction inside the calling
 * function (libbpf makes it the same recursive call). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef TARGET
#define TARGET 0
#endif

#if TARGET == 0
#define CALL_IMM "(es_callee - . - 4) / 8"
#elif TARGET == 1
#define CALL_IMM "(es_callee - . - 4) / 8 + 1"
#elif TARGET == 2
#define CALL_IMM "(es_caller - . - 4) / 8"
#else
#define CALL_IMM "(1f - . - 4) / 8"
#endif

__attribute__((noinline)) int es_callee(int x)
{
	return x + 1;
}

__attribute__((noinline)) int es_caller(int x)
{
	/* call with src_reg BPF_PSEUDO_CALL, imm from CALL_IMM; r1 = 1 first, for the callee */
	asm volatile("r1 = 1\n\t"
		     ".long 0x00001085\n\t"
		     ".long " CALL_IMM "\n\t"
		     "r0 = 0\n"
		     "1:\n\t"
		     "r0 += 0"
		     ::: "r0", "r1", "r2", "r3", "r4", "r5");
	return x;
}

SEC("socket")
int midcall_prog(struct __sk_buff *skb)
{
	return es_caller(skb->len);
}

char LICENSE[] SEC("license") = "GPL";
