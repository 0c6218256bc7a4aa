/* Probe, tracepoint and other tracing section names (libbpf 1.1), with a target, without one
 * (libbpf loads them and attaches nothing by itself) and with one libbpf's auto-attach cannot
 * read; each program on its own: tests/test_progtypes.py loads each with evspec verify and with
 * libbpf (load_one.c). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define PROG(sec, name) SEC(sec) int name(void *ctx) { return 0; }

PROG("kprobe", on_kprobe)
PROG("kretprobe", on_kretprobe)
PROG("kprobe/do_unlinkat", on_kprobe_target)
PROG("uprobe", on_uprobe)
PROG("uretprobe", on_uretprobe)
PROG("uretprobe/readline", on_uretprobe_no_binary)
PROG("uprobe//bin/true:main", on_uprobe_target)
/* bpf_copy_from_user is for sleepable programs only: the verifier refuses it unless the program
 * is loaded with BPF_F_SLEEPABLE, as libbpf loads a uprobe.s program */
SEC("uprobe.s")
int on_uprobe_s(void *ctx)
{
	char buf[8];

	return bpf_copy_from_user(buf, sizeof(buf), (void *)0x1000) ? 1 : 0;
}
PROG("uretprobe.s//bin/true:main", on_uretprobe_s)
PROG("usdt", on_usdt)
PROG("usdt//usr/lib/libc.so.6:libc:setjmp", on_usdt_target)
PROG("ksyscall", on_ksyscall)
PROG("ksyscall/getpgid", on_ksyscall_target)
PROG("kretsyscall/getpgid", on_kretsyscall_target)
PROG("kprobe.multi", on_kprobe_multi)
PROG("kretprobe.multi/do_unlink*", on_kretprobe_multi_target)
PROG("tracepoint", on_tracepoint)
PROG("tp", on_tp)
PROG("tp/sched/sched_switch", on_tp_target)
PROG("tracepoint/sched", on_tracepoint_half_target)
PROG("raw_tp", on_raw_tp)
PROG("raw_tracepoint/sched_switch", on_raw_tracepoint_target)
PROG("raw_tp.w/sched_switch", on_raw_tp_w)
PROG("raw_tracepoint.w", on_raw_tracepoint_w)
PROG("perf_event", on_perf_event)
PROG("syscall", on_syscall)
PROG("struct_ops/evspec_op", on_struct_ops)
PROG("kprobe_evspec", on_unknown_kprobe_name)
PROG("evspec_unknown", on_unknown)

char LICENSE[] SEC("license") = "GPL";
