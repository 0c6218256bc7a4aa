/* libbpf's own __kconfig values: the kernel version, and whether the kernel has
 * bpf_get_attach_cookie and syscall wrappers; all resolve. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern _Bool LINUX_HAS_BPF_COOKIE __kconfig;
extern _Bool LINUX_HAS_SYSCALL_WRAPPER __kconfig;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	return LINUX_KERNEL_VERSION + LINUX_HAS_BPF_COOKIE + LINUX_HAS_SYSCALL_WRAPPER > 0;
}

char LICENSE[] SEC("license") = "GPL";
