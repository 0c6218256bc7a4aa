/* A typed __ksym the kernel's BTF has (bpf_prog_active, a per-CPU int) and a weak one it lacks.
 * Both resolve; whether the verifier then finds bpf_prog_active's address (kallsyms lists data
 * symbols only with CONFIG_KALLSYMS_ALL) is no extern's matter. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern const int bpf_prog_active __ksym;
extern const int evspec_no_such_var __ksym __weak;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	const int *active = bpf_this_cpu_ptr(&bpf_prog_active);

	if (&evspec_no_such_var)
		return 2;
	return *active >= 0;
}

char LICENSE[] SEC("license") = "GPL";
