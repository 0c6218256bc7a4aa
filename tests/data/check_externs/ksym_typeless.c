/* Typeless __ksyms take their address from /proc/kallsyms: __start_rodata is there, a weak one
 * nobody has is 0. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern const void __start_rodata __ksym;
extern const void evspec_no_such_symbol __ksym __weak;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return (unsigned long)&__start_rodata != (unsigned long)&evspec_no_such_symbol;
}

char LICENSE[] SEC("license") = "GPL";
