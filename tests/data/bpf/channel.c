// SPDX-License-Identifier: GPL-2.0
/* channel.c - emits the 8 values of `arr` through the `channel` event array, so a test reads
 * what map:arr.value terms stored from the recorded output. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} channel SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, __u32);
	__uint(max_entries, 8);
} arr SEC(".maps");

SEC("syscalls:sys_enter_clock_nanosleep")
int dump_arr(void *ctx)
{
	__u32 out[8];

	for (int i = 0; i < 8; i++) {
		int key = i;
		__u32 *v = bpf_map_lookup_elem(&arr, &key);

		out[i] = v ? *v : 0xffffffff;
	}
	bpf_perf_event_output(ctx, &channel, BPF_F_CURRENT_CPU, out, sizeof(out));
	return 0;
}

char _license[] SEC("license") = "GPL";
