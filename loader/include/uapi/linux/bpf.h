/* SPDX-License-Identifier: MIT */
/*
 * evspec's stand-in for the kernel-tree header <uapi/linux/bpf.h> that perf-era BPF scriptlets
 * include (perf compiled them against a kernel build directory).  It pulls in the installed UAPI
 * header <linux/bpf.h> (BPF_MAP_TYPE_*, BPF_FUNC_*, struct bpf_insn ...) and adds the kernel's
 * short integer type names, which those programs use freely and which userspace headers lack.
 */
#ifndef EVSPEC_UAPI_LINUX_BPF_H
#define EVSPEC_UAPI_LINUX_BPF_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <evspec/kernel_types.h>

#endif /* EVSPEC_UAPI_LINUX_BPF_H */
