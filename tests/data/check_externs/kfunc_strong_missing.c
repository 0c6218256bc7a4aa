/* A strong kfunc the kernel's BTF lacks: the load fails naming it; the rcu kfuncs resolve. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern void bpf_evspec_nokfunc(void) __ksym;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	bpf_rcu_read_lock();
	bpf_evspec_nokfunc();
	bpf_rcu_read_unlock();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
