/* A weak kfunc the kernel lacks, called only when it resolved (bpf_ksym_exists, which older
 * bpf_helpers.h lack, tests the same): its call is poisoned and dead, and the object loads. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern void bpf_evspec_nokfunc(void) __ksym __weak;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	bpf_rcu_read_lock();
	if (bpf_evspec_nokfunc)
		bpf_evspec_nokfunc();
	bpf_rcu_read_unlock();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
