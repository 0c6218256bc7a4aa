// SPDX-License-Identifier: GPL-2.0
/* tracing_args.c - a libbpf-style source as libbpf-bootstrap builds them: vmlinux.h (made with
 * bpftool from the kernel's BTF, found through --clang-opt=-I DIR), BPF_KPROBE / BPF_UPROBE from
 * bpf_tracing.h, whose PT_REGS_PARMn macros name the registers of the architecture that
 * __TARGET_ARCH_<arch> says (evspec defines it from the machine). The uprobe's target comes from
 * --clang-opt=-DWORKLOAD="PATH": it stores the sum of add_them's two arguments. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifndef WORKLOAD
#define WORKLOAD "/bin/true"
#endif
#ifndef BPF_UPROBE /* libbpf < 1.2 (Debian 12's 1.1) */
#define BPF_UPROBE(name, args...) BPF_KPROBE(name, ##args)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static void store(__u32 key, __u64 value)
{
	bpf_map_update_elem(&seen, &key, &value, BPF_ANY);
}

SEC("uprobe/" WORKLOAD ":add_them")
int BPF_UPROBE(on_add, long a, long b)
{
	store(0, a + b);
	return 0;
}

SEC("kprobe")
int BPF_KPROBE(on_nanosleep, void *t, int mode)
{
	store(1, mode);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
