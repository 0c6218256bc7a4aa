/* Review: instructions whose imm only a loader can give, written as raw words without a
 * relocation. Two kfunc calls (src_reg BPF_PSEUDO_KFUNC_CALL): the kernel takes each imm as a BTF
 * id of the running kernel, whichever function that is; the test passes the ids of
 * bpf_rcu_read_lock and bpf_rcu_read_unlock in this kernel as LOCK and UNLOCK. With MAP_FD, an
 * ld_imm64 with src_reg BPF_PSEUDO_MAP_FD instead: its imm would be a file descriptor of the
 * loading process. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define STR(x) #x
#define XSTR(x) STR(x)

SEC("socket")
int rawkfunc_prog(struct __sk_buff *skb)
{
#ifdef MAP_FD
	asm volatile(".long 0x00001118\n\t"  /* r1 = map fd MAP_FD (ld_imm64, src_reg 1) */
		     ".long " XSTR(MAP_FD) "\n\t"
		     ".long 0\n\t"
		     ".long 0"
		     ::: "r1");
#else
	asm volatile(".long 0x00002085\n\t"
		     ".long " XSTR(LOCK) "\n\t"
		     ".long 0x00002085\n\t"
		     ".long " XSTR(UNLOCK)
		     ::: "r0", "r1", "r2", "r3", "r4", "r5");
#endif
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
