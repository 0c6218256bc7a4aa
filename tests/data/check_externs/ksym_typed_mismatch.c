/* bpf_prog_active is an int in the kernel's BTF; declared as a struct it does not match, and
 * the load fails. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct evspec_active { int value; };

extern const struct evspec_active bpf_prog_active __ksym;

SEC("raw_tp/sys_enter")
int prog(void *ctx)
{
	const struct evspec_active *active = bpf_this_cpu_ptr(&bpf_prog_active);

	return active->value >= 0;
}

char LICENSE[] SEC("license") = "GPL";
