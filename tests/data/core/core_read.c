// SPDX-License-Identifier: GPL-2.0
/* core_read.c - a tracepoint program that reads pid and tgid of the current task through a CO-RE
 * flavour of task_struct (BPF_CORE_READ): two field_byte_offset relocations, which evspec does not
 * apply yet and must therefore refuse rather than load with clang's local offsets. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
struct task_struct___mine { int pid; int tgid; } __attribute__((preserve_access_index));
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");
SEC("raw_syscalls:sys_enter")
int on_enter(void *ctx)
{
	struct task_struct___mine *t = (void *)bpf_get_current_task();
	int v[2] = { BPF_CORE_READ(t, pid), BPF_CORE_READ(t, tgid) };
	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, v, sizeof(v));
	return 0;
}
char _license[] SEC("license") = "GPL";
