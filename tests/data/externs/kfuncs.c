/* kfuncs: bpf_rcu_read_lock/unlock (common kfuncs, every program type) called; a weak kfunc the
 * kernel lacks, called only when it resolved (the verifier drops the dead call). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern void evspec_no_such_kfunc(void) __ksym __weak;

SEC("raw_tp/sys_enter")
int call_kfuncs(void *ctx)
{
	int ret = 1;

	bpf_rcu_read_lock();
	bpf_rcu_read_unlock();
	if (evspec_no_such_kfunc) {
		evspec_no_such_kfunc();
		ret = 2;
	}
	return ret;
}

char LICENSE[] SEC("license") = "GPL";
