/* A typeless __ksym named AMBIGUOUS (given with -DAMBIGUOUS=NAME: a name /proc/kallsyms lists at
 * two addresses, which differ from kernel to kernel): libbpf refuses it as ambiguous. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern const void AMBIGUOUS __ksym;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return (unsigned long)&AMBIGUOUS >> 40;  /* its address used: the extern stays */
}

char LICENSE[] SEC("license") = "GPL";
