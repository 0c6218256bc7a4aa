/* A typed __ksym: bpf_prog_active (a per-CPU int in vmlinux BTF). The ld_imm64 becomes
 * BPF_PSEUDO_BTF_ID with the VAR's id; the verifier then needs the variable's address in
 * kallsyms, which a kernel without CONFIG_KALLSYMS_ALL does not list. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern const int bpf_prog_active __ksym;
extern const int evspec_no_such_var __ksym __weak;

SEC("raw_tp/sys_enter")
int read_typed(void *ctx)
{
	const int *active = bpf_this_cpu_ptr(&bpf_prog_active);

	if (&evspec_no_such_var)
		return 2;
	return *active >= 0;
}

char LICENSE[] SEC("license") = "GPL";
