/*
 * hello.c - the seed's __bpf_stdout__ example, written the 2016 way (struct bpf_map_def in
 * SEC("maps"), helper pointers), on a tracepoint instead of a kprobe:
 *
 *     evspec record -e ./examples/hello.c -- sleep 0.1
 *
 * evspec compiles it with clang, creates the bpf-output event __bpf_stdout__ by itself, attaches
 * the program and prints what it emits, as perf script does.
 */
#include <uapi/linux/bpf.h>

struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
};

#define SEC(NAME) __attribute__((section(NAME), used))

static int (*get_smp_processor_id)(void) = (void *)BPF_FUNC_get_smp_processor_id;
static int (*perf_event_output)(void *, struct bpf_map_def *, int, void *, unsigned long) =
	(void *)BPF_FUNC_perf_event_output;

struct bpf_map_def SEC("maps") __bpf_stdout__ = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = __NR_CPUS__,
};

SEC("syscalls:sys_enter_clock_nanosleep")
int func_begin(void *ctx)
{
	char output_str[] = "Raise a BPF event!";

	perf_event_output(ctx, &__bpf_stdout__, get_smp_processor_id(), &output_str, sizeof(output_str));
	return 0;
}

char _license[] SEC("license") = "GPL";
int _version SEC("version") = LINUX_VERSION_CODE;
