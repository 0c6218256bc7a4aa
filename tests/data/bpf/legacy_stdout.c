// SPDX-License-Identifier: GPL-2.0
/* legacy_stdout.c - __bpf_stdout__ declared the pre-BTF way, in SEC("maps") (perf 6.1 with
 * libbpf 1.x refuses such objects). One entry: run the workload on CPU 0. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

struct bpf_map_def SEC("maps") __bpf_stdout__ = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(int),
	.max_entries = 1,
};

SEC("syscalls:sys_enter_clock_nanosleep")
int legacy_out(void *ctx)
{
	char msg[] = "legacy maps";

	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, msg, sizeof(msg));
	return 0;
}

char _license[] SEC("license") = "GPL";
