// SPDX-License-Identifier: GPL-2.0
/* autoload.c - two programs on the workload's getppid() calls: 'off' in a SEC("?...") section
 * (libbpf's autoload-off convention: loaded, never attached) would send 1, 'on' sends 2. A
 * tracepoint program runs for every task's getppid(): only a task whose comm is targ_comm
 * (var:targ_comm='NAME', the test's copy of the workload under a name of its own) sends. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile char targ_comm[16] = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

static __always_inline int send(void *ctx, __u64 tag)
{
	char comm[16];

	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < 16; i++) {
		if (comm[i] != targ_comm[i])
			return 0;
		if (!comm[i])
			break;
	}
	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &tag, sizeof(tag));
	return 0;
}

SEC("?tracepoint/syscalls/sys_enter_getppid")
int off(void *ctx)
{
	return send(ctx, 1);
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int on(void *ctx)
{
	return send(ctx, 2);
}

char _license[] SEC("license") = "GPL";
