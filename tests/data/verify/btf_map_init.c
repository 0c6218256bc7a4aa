/* btf_map_init.c - the shape of cilium/ebpf's testdata/btf_map_init.c: a PROG_ARRAY whose
 * .values initialiser names a program in a section libbpf has no program type for
 * ("socket/tail": libbpf 1.x matches "socket" exactly), so that neither libbpf nor evspec verify
 * loads it, and a map-in-map initialised with another map. Built as is, and with -DLIBBPF_NAMES
 * (sections "socket") and -DREFUSED (tail_1 reads address 0: the verifier refuses it). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifdef LIBBPF_NAMES
#define TAIL_SEC "socket"
#define MAIN_SEC "socket"
#else
#define TAIL_SEC "socket/tail"
#define MAIN_SEC "socket/main"
#endif

SEC(TAIL_SEC)
int tail_1(void *ctx)
{
#ifdef REFUSED
	return *(volatile int *)0;
#else
	return 42;
#endif
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 2);
	__array(values, int(void *));
} prog_array_init SEC(".maps") = {
	.values = { [1] = &tail_1 },  /* slot 0 stays empty */
};

SEC(MAIN_SEC)
int tail_main(void *ctx)
{
	bpf_tail_call(ctx, &prog_array_init, 1);
	return 0;
}

struct inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} inner_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
	__array(values, struct inner);
} outer_map_init SEC(".maps") = {
	.values = { [1] = &inner_map },
};
