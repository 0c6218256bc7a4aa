/* Item 1: a map pinned by name. PIN_MAX_ENTRIES / PIN_VALUE change the declaration (-D) so the
 * tests can make a mismatching or an invalid one. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef PIN_MAX_ENTRIES
#define PIN_MAX_ENTRIES 16
#endif
#ifndef PIN_VALUE
#define PIN_VALUE LIBBPF_PIN_BY_NAME
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, PIN_MAX_ENTRIES);
	__uint(pinning, PIN_VALUE);
} es_pinned SEC(".maps");

SEC("socket")
int pin_prog(void *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&es_pinned, &key);

	return v ? *v : 0;
}

char LICENSE[] SEC("license") = "GPL";
