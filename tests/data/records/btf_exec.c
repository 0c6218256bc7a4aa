// SPDX-License-Identifier: GPL-2.0
/* btf_exec.c - a BTF tracepoint on sched_process_exec (arguments typed by the kernel's BTF:
 * struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm): every exec sends a
 * `struct exec_record` to the ring buffer `execs`: p->pid and p->comm read directly through the
 * typed pointer (CO-RE offsets), old_pid, and the file name bprm->filename points to. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct task_struct___rec {
	int pid;
	char comm[16];
} __attribute__((preserve_access_index));

struct linux_binprm___rec {
	const char *filename;
} __attribute__((preserve_access_index));

struct exec_record {
	__u32 pid;
	__u32 old_pid;
	char comm[16];
	char filename[64];
};

struct exec_record *unused_exec_record __attribute__((unused)); /* keeps the type in BTF */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} execs SEC(".maps");

SEC("tp_btf/sched_process_exec")
int on_exec(__u64 *ctx)
{
	struct task_struct___rec *p = (void *)ctx[0];
	struct linux_binprm___rec *bprm = (void *)ctx[2];
	struct exec_record *r = bpf_ringbuf_reserve(&execs, sizeof(*r), 0);

	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r)); /* reserved space holds older records' bytes */
	r->pid = p->pid;
	r->old_pid = ctx[1];
	bpf_probe_read_kernel(r->comm, sizeof(r->comm), p->comm);
	bpf_probe_read_kernel_str(r->filename, sizeof(r->filename), bprm->filename);
	bpf_ringbuf_submit(r, 0);
	return 0;
}

char _license[] SEC("license") = "GPL";
