// SPDX-License-Identifier: GPL-2.0
/* core_task.c - CO-RE reads of the current task through a flavour of task_struct: on each
 * getppid() of the workload a `struct task_record` goes into the ring buffer `tasks` with pid,
 * tgid and the parent's tgid (BPF_CORE_READ, through real_parent), the comm (a string read), the
 * size the kernel gives comm, whether a field the kernel lacks exists (0) and an enumerator's
 * value in the kernel (PIDTYPE_MAX: 4, where the local enum says 99). */
#include "records.h"
#include <bpf/bpf_core_read.h>

struct task_struct___rec {
	int pid;
	int tgid;
	struct task_struct___rec *real_parent;
	char comm[16];
	int no_such_field;
} __attribute__((preserve_access_index));

enum pid_type___rec { PIDTYPE_MAX = 99 };

struct task_record {
	__u32 pid;
	__u32 tgid;
	__u32 ppid;
	__u32 comm_size;
	__u32 missing_exists;
	__u32 pidtype_max;
	__u64 seq;
	char comm[16];
};

struct task_record *unused_task_record __attribute__((unused)); /* keeps the type in BTF */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} tasks SEC(".maps");

SEC("tp/syscalls/sys_enter_getppid")
int on_getppid(void *ctx)
{
	struct task_struct___rec *task = (void *)bpf_get_current_task();
	struct task_record *r;

	if (!is_workload())
		return 0;
	r = bpf_ringbuf_reserve(&tasks, sizeof(*r), 0);
	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r)); /* reserved space holds older records' bytes */
	r->pid = BPF_CORE_READ(task, pid);
	r->tgid = BPF_CORE_READ(task, tgid);
	r->ppid = BPF_CORE_READ(task, real_parent, tgid);
	r->comm_size = bpf_core_field_size(task->comm);
	r->missing_exists = bpf_core_field_exists(task->no_such_field);
	r->pidtype_max = bpf_core_enum_value(enum pid_type___rec, PIDTYPE_MAX);
	r->seq = next_seq(r->pid);
	BPF_CORE_READ_STR_INTO(&r->comm, task, comm);
	bpf_ringbuf_submit(r, 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
