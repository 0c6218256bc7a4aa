/* A strong typeless __ksym that /proc/kallsyms does not list: the load fails naming it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern const void evspec_no_such_symbol __ksym;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return (unsigned long)&evspec_no_such_symbol >> 40;  /* its address used: the extern stays */
}

char LICENSE[] SEC("license") = "GPL";
