/* Externs of every kind, declared out of libbpf's order: libbpf sorts its extern list (kconfig
 * ones first, by alignment, size and name; then ksyms and kfuncs by name) and a weak kfunc the
 * kernel lacks becomes a call of 2002000000 + its index in that list (libbpf 1.2 and later).
 * The calls of the two missing kfuncs are dead code unless REACHABLE is 1. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef REACHABLE
#define REACHABLE 0
#endif

extern void zz_evspec_missing(void) __ksym __weak;
extern int CONFIG_HZ __kconfig;
extern void bpf_rcu_read_unlock(void) __ksym;
extern _Bool LINUX_HAS_BPF_COOKIE __kconfig;
extern const void __start_rodata __ksym;
extern unsigned long long CONFIG_EVSPEC_NO_SUCH_U64 __kconfig __weak;
extern void aa_evspec_missing(void) __ksym __weak;
extern char CONFIG_LOCALVERSION[16] __kconfig;
extern const int evspec_no_such_var __ksym __weak;
extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern void bpf_rcu_read_lock(void) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, unsigned long long);
} out SEC(".maps");

SEC("raw_tp/sys_enter")
int call_in_order(void *ctx)
{
	int key = 0;
	unsigned long long *v = bpf_map_lookup_elem(&out, &key);
	unsigned long long sum;

	if (!v)
		return 0;
	bpf_rcu_read_lock();
	if (REACHABLE || zz_evspec_missing)
		zz_evspec_missing();
	sum = CONFIG_HZ + LINUX_HAS_BPF_COOKIE + CONFIG_EVSPEC_NO_SUCH_U64 + CONFIG_LOCALVERSION[0];
	sum += LINUX_KERNEL_VERSION + (unsigned long long)&__start_rodata + (unsigned long long)&evspec_no_such_var;
	if (REACHABLE || aa_evspec_missing)
		aa_evspec_missing();
	bpf_rcu_read_unlock();
	*v = sum;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
