/* A static function placed in a program section (raw_syscalls:sys_exit): libbpf refuses the
 * object ("program is static and not supported"); record refuses it before any system call, and
 * check, which needs no kernel, refuses it too. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline, section("raw_syscalls:sys_exit"))) int local_fn(int x)
{
	return x * 3;
}

SEC("raw_syscalls:sys_enter")
int on_enter(void *ctx)
{
	return local_fn(bpf_get_smp_processor_id()) & 1;
}

char LICENSE[] SEC("license") = "GPL";
