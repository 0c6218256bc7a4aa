// SPDX-License-Identifier: GPL-2.0
/* btf_getppid.c - a tp_btf program on sys_enter (typed by the kernel's BTF: its arguments are
 * the tracepoint's, struct pt_regs *regs and long id) that sends the syscall id of every getppid()
 * made by a task called "getppid" to __bpf_stdout__. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define NR_GETPPID 110 /* x86_64 */

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

SEC("tp_btf/sys_enter")
int on_sys_enter(__u64 *ctx)
{
	char comm[16];
	__u64 id = ctx[1];

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
