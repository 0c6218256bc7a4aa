// SPDX-License-Identifier: GPL-2.0
/* kretprobe.c - a libbpf-style kretprobe alone: `evspec check` lets it through (with EB108, a
 * section perf cannot use), so a kernel without kprobes is reported by the attacher. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("kretprobe/vfs_read")
int on_read_return(void *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
