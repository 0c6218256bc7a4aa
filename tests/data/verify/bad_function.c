/* bad_function.c - one function of the object has an instruction only a loader can fill and no
 * relocation saying how: an ld_imm64 with src_reg BPF_PSEUDO_MAP_FD and imm 1000, a map "file
 * descriptor" of whichever process loads it. libbpf passes it on: the kernel refuses the program
 * that calls it (EBADF) and loads the others. evspec refuses that program by name, and loads the
 * others too (tests/test_verify_isolation.py). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline)) int broken(int x)
{
	asm volatile(".long 0x00001118\n\t"  /* r1 = map fd 1000 (ld_imm64, src_reg 1) */
		     ".long 1000\n\t"
		     ".long 0\n\t"
		     ".long 0"
		     ::: "r1");
	return x;
}

static __attribute__((noinline)) int fine(int x)
{
	return x + 1;
}

SEC("socket")
int uses_broken(struct __sk_buff *skb)
{
	return broken(skb->len);
}

SEC("socket")
int uses_fine(struct __sk_buff *skb)
{
	return fine(skb->len);
}

SEC("socket")
int alone(struct __sk_buff *skb)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
