// SPDX-License-Identifier: GPL-2.0
/* pinned_probe.c - a perf-style uprobe on the C library's getppid (LIBC given with -D) counting
 * into a map pinned by name: a set-up that makes a tracefs entry, a pin and perf events. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} es_calls SEC(".maps");

SEC("exec=" LIBC ";probe=getppid")
int count(void *ctx)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&es_calls, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
