/* CONFIG_HZ is a number (250, 1000...): a _Bool cannot hold it, and libbpf fails the load. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern _Bool CONFIG_HZ __kconfig;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return CONFIG_HZ;
}

char LICENSE[] SEC("license") = "GPL";
