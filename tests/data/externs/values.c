/* kconfig and ksym externs: a socket filter that copies what it sees into `out` (run with
 * BPF_PROG_TEST_RUN), compared by tests/test_externs_live.py with what libbpf gives it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>


extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern _Bool LINUX_HAS_BPF_COOKIE __kconfig;
extern _Bool CONFIG_BPF_SYSCALL __kconfig;
extern enum libbpf_tristate CONFIG_BPF_JIT __kconfig;
extern int CONFIG_HZ __kconfig;
extern char CONFIG_LOCALVERSION[16] __kconfig;
extern int CONFIG_EVSPEC_NO_SUCH_OPTION __kconfig __weak;
extern const void __start_rodata __ksym;
extern const void evspec_no_such_symbol __ksym __weak;

struct values {
	unsigned long long version, cookie, bpf_syscall, jit, hz, missing;
	unsigned long long start_rodata, no_such_symbol;
	char localversion[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct values);
} out SEC(".maps");

SEC("raw_tp/sys_enter")
int copy_values(void *ctx)
{
	int key = 0;
	struct values *v = bpf_map_lookup_elem(&out, &key);

	if (!v)
		return 0;
	v->version = LINUX_KERNEL_VERSION;
	v->cookie = LINUX_HAS_BPF_COOKIE;
	v->bpf_syscall = CONFIG_BPF_SYSCALL;
	v->jit = CONFIG_BPF_JIT;
	v->hz = CONFIG_HZ;
	v->missing = CONFIG_EVSPEC_NO_SUCH_OPTION;
	v->start_rodata = (unsigned long long)&__start_rodata;
	v->no_such_symbol = (unsigned long long)&evspec_no_such_symbol;
	__builtin_memcpy(v->localversion, CONFIG_LOCALVERSION, sizeof(v->localversion));
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
