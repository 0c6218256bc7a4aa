/* Weak __kconfig externs nobody sets: a CONFIG_ option and a LINUX_ name libbpf does not know.
 * Both are 0; the object loads. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern int CONFIG_EVSPEC_NOPE __kconfig __weak;
extern int LINUX_EVSPEC_NOPE __kconfig __weak;
extern int CONFIG_HZ __kconfig;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return CONFIG_EVSPEC_NOPE + LINUX_EVSPEC_NOPE + CONFIG_HZ > 0;
}

char LICENSE[] SEC("license") = "GPL";
