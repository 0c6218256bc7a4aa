/*
 * test_bpf_map_2.c from the seed (perf commit "perf tools: Enable passing event to BPF object"),
 * as written there, with its line breaks restored and the include name the commit text
 * lost put back as <uapi/linux/bpf.h> (tests/test_objects_seed.py checks both).
 */
#include <uapi/linux/bpf.h>
#define SEC(NAME) __attribute__((section(NAME), used))
struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
};
static int (*trace_printk)(const char *fmt, int fmt_size, ...) =
	(void *)BPF_FUNC_trace_printk;
static int (*get_smp_processor_id)(void) =
	(void *)BPF_FUNC_get_smp_processor_id;
static int (*perf_event_read)(struct bpf_map_def *, int) =
	(void *)BPF_FUNC_perf_event_read;

struct bpf_map_def SEC("maps") pmu_map = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(int),
	.max_entries = __NR_CPUS__,
};
SEC("func_write=sys_write")
int func_write(void *ctx)
{
	unsigned long long val;
	char fmt[] = "sys_write: pmu=%llu\n";
	val = perf_event_read(&pmu_map, get_smp_processor_id());
	trace_printk(fmt, sizeof(fmt), val);
	return 0;
}

SEC("func_write_return=sys_write%return")
int func_write_return(void *ctx)
{
	unsigned long long val = 0;
	char fmt[] = "sys_write_return: pmu=%llu\n";
	val = perf_event_read(&pmu_map, get_smp_processor_id());
	trace_printk(fmt, sizeof(fmt), val);
	return 0;
}
char _license[] SEC("license") = "GPL";
int _version SEC("version") = LINUX_VERSION_CODE;
