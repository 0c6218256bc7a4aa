/* CONFIG_LOCALVERSION in a char[2]: libbpf cuts the string to one byte and its NUL, warns, and
 * loads (so does evspec). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern char CONFIG_LOCALVERSION[2] __kconfig;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return CONFIG_LOCALVERSION[0];
}

char LICENSE[] SEC("license") = "GPL";
