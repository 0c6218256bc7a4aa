/* Trampoline-based and BTF-typed program types (libbpf 1.1 section names), each program on its
 * own: tests/test_progtypes.py loads each with evspec verify and with libbpf (load_one.c). The
 * targets exist in any x86-64 kernel's BTF of 5.x/6.x; 'evspec_no_such_function' in none. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define PROG(sec, name) SEC(sec) int name(void *ctx) { return 0; }

PROG("fentry/do_unlinkat", on_fentry)
PROG("fexit/do_unlinkat", on_fexit)
PROG("fmod_ret/__x64_sys_getpgid", on_fmod_ret)
PROG("fentry.s/__x64_sys_getpgid", on_fentry_s)
PROG("fexit.s/__x64_sys_getpgid", on_fexit_s)
PROG("fmod_ret.s/__x64_sys_getpgid", on_fmod_ret_s)
PROG("fentry/evspec_no_such_function", on_missing_function)
PROG("fentry", on_no_target)
PROG("freplace/some_function", on_freplace)
PROG("lsm/file_open", on_lsm)
PROG("lsm.s/bprm_committed_creds", on_lsm_s)
PROG("lsm_cgroup/socket_bind", on_lsm_cgroup)
PROG("lsm/evspec_no_such_hook", on_missing_hook)
PROG("iter/task", on_iter)
PROG("iter.s/task", on_iter_s)
PROG("iter/evspec_no_such_iterator", on_missing_iter)
PROG("tp_btf/sched_switch", on_tp_btf)
PROG("tp_btf/evspec_no_such_tracepoint", on_missing_tp_btf)
PROG("tp_btf", on_tp_btf_no_target)

char LICENSE[] SEC("license") = "GPL";
