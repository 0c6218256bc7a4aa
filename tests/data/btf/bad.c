// SPDX-License-Identifier: GPL-2.0
/* bad.c - a program the verifier refuses (it reads through a pointer that may be NULL): with
 * line_info, the verifier log names the source line. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, int);
	__type(value, long);
	__uint(max_entries, 1);
} counts SEC(".maps");

SEC("syscalls:sys_enter_getppid")
int unchecked(void *ctx)
{
	int key = 0;
	long *value = bpf_map_lookup_elem(&counts, &key);

	return *value > 0;
}

char _license[] SEC("license") = "GPL";
