// SPDX-License-Identifier: GPL-2.0
/* raw_getppid.c - a raw tracepoint program on sys_enter (system-wide: every task's syscalls) that
 * sends one record per getppid() made by a task called "getppid" to __bpf_stdout__: the syscall
 * number taken from the raw arguments (args[1] of sys_enter is the syscall's id). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define NR_GETPPID 110 /* x86_64 */

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

SEC("raw_tp/sys_enter")
int on_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	char comm[16];
	__u64 id = ctx->args[1];

	if (id != NR_GETPPID)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	if (comm[0] != 'g' || comm[1] != 'e' || comm[2] != 't' || comm[3] != 'p' || comm[4] != 'p' ||
	    comm[5] != 'i' || comm[6] != 'd' || comm[7] != 0)
		return 0;
	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &id, sizeof(id));
	return 0;
}

char _license[] SEC("license") = "GPL";
