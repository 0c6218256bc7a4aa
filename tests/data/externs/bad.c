/* Externs evspec (and libbpf) must refuse, one per -D switch: BAD_TYPE (a pointer __kconfig),
 * MISSING_CONFIG, MISSING_KSYM, MISSING_KFUNC (strong, absent), BAD_PROTO (a kfunc declared
 * with another prototype), UNKNOWN_LINUX (a LINUX_ name libbpf does not define), NOT_BOOL
 * (CONFIG_HZ, a number, declared bool). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#if defined(BAD_TYPE)
extern void *CONFIG_BPF_SYSCALL __kconfig;
#define USE() (long)CONFIG_BPF_SYSCALL
#elif defined(MISSING_CONFIG)
extern int CONFIG_EVSPEC_NO_SUCH_OPTION __kconfig;
#define USE() CONFIG_EVSPEC_NO_SUCH_OPTION
#elif defined(MISSING_KSYM)
extern const void evspec_no_such_symbol __ksym;
#define USE() (long)&evspec_no_such_symbol
#elif defined(MISSING_KFUNC)
extern void evspec_no_such_kfunc(void) __ksym;
#define USE() (evspec_no_such_kfunc(), 0)
#elif defined(BAD_PROTO)
extern int bpf_rcu_read_lock(int x) __ksym;
#define USE() bpf_rcu_read_lock(1)
#elif defined(UNKNOWN_LINUX)
extern int LINUX_EVSPEC_NOPE __kconfig;
#define USE() LINUX_EVSPEC_NOPE
#elif defined(NOT_BOOL)
extern _Bool CONFIG_HZ __kconfig;
#define USE() CONFIG_HZ
#endif

SEC("raw_tp/sys_enter")
int bad(void *ctx)
{
	return USE();
}

char LICENSE[] SEC("license") = "GPL";
