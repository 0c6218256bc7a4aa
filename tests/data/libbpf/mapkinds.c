/* Item 11: a ring buffer whose size is no power-of-two multiple of the page size (libbpf rounds
 * it up), keyless queue and stack maps, and global data (.data, .bss, .rodata: BPF_F_MMAPABLE). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 5000);
} es_ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__type(value, __u64);
	__uint(max_entries, 8);
} es_queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__type(value, __u32);
	__uint(max_entries, 8);
} es_stack SEC(".maps");

__u64 es_counter = 1;
__u32 es_zero;
const volatile __u32 es_limit = 9;

SEC("socket")
int kinds_prog(void *ctx)
{
	__u64 v = es_counter + es_zero + es_limit;

	bpf_map_push_elem(&es_queue, &v, 0);
	bpf_ringbuf_output(&es_ring, &v, sizeof(v), 0);
	es_zero++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
