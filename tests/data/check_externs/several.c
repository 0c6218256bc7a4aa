/* Issue #11's example: a strong kconfig value, kfunc and typeless ksym the kernel lacks (the
 * last one only without CONFIG_KALLSYMS_ALL), among externs that resolve. verify names the first
 * failure; check names each. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern int CONFIG_HZ __kconfig;
extern int CONFIG_EVSPEC_NOPE __kconfig;
extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern void bpf_evspec_nokfunc(void) __ksym;
extern const void bpf_prog_active __ksym;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	bpf_rcu_read_lock();
	bpf_evspec_nokfunc();
	bpf_rcu_read_unlock();
	bpf_printk("%d %u %p", CONFIG_HZ + CONFIG_EVSPEC_NOPE, LINUX_KERNEL_VERSION, &bpf_prog_active);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
