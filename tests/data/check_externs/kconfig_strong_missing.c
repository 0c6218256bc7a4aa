/* A strong __kconfig extern the kernel's Kconfig does not set: libbpf (and evspec verify) fail
 * the load naming it; CONFIG_HZ resolves. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern int CONFIG_HZ __kconfig;
extern int CONFIG_EVSPEC_NOPE __kconfig;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return CONFIG_HZ + CONFIG_EVSPEC_NOPE > 0;
}

char LICENSE[] SEC("license") = "GPL";
