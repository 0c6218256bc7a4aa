/* pinned_slow.c - a map pinned by name (LIBBPF_PIN_BY_NAME) and a program the verifier takes a
 * while over (it walks each of the loop's 60,000 iterations, about 400,000 instructions): verify
 * holds the map's pin in its private directory for as long, the window in which the tests send it
 * SIGTERM or SIGKILL. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} es_verify_pinned SEC(".maps");

SEC("raw_syscalls:sys_enter")
int slow(void *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&es_verify_pinned, &key);
	__u64 x = 0;

	if (!v)
		return 0;
	for (int i = 0; i < 60000; i++)
		x = x * 3 + i;
	*v = x;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
