// SPDX-License-Identifier: GPL-2.0
/* rejected.c - two tracepoint programs the kernel refuses: the verifier (a helper told to write
 * 32 bytes into 8), and PERF_EVENT_IOC_SET_BPF (a read past the tracepoint's record, which the
 * verifier lets through and the kernel checks against the tracepoint when the program is set). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifdef PAST_THE_RECORD
SEC("syscalls:sys_enter_getppid")
int past_the_record(void *ctx)
{
	return *(long *)((char *)ctx + 4096);
}
#else
SEC("syscalls:sys_enter_getppid")
int overflow(void *ctx)
{
	char comm[8];

	bpf_get_current_comm(comm, 32);
	return comm[0];
}
#endif

char _license[] SEC("license") = "GPL";
