/* BPF programs called through an argument prologue: prog(ctx, err, arg1, arg2, arg3).
 * Each hit is stored in `seen` under its first argument (0 after a failed fetch). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct hit {
	__u64 err;
	__u64 args[3];
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, struct hit);
} seen SEC(".maps");

static __always_inline void note(long err, long a, long b, long c)
{
	__u64 key = a;
	struct hit h = { .err = err, .args = { a, b, c }, .count = 1 };
	struct hit *old = bpf_map_lookup_elem(&seen, &key);

	if (old)
		h.count = old->count + 1;
	bpf_map_update_elem(&seen, &key, &h, BPF_ANY);
}

SEC("exec=/bin/true;h6b_fetch3=add3* a b c")
int h6b_fetch3(void *ctx, long err, long a, long b, long c)
{
	note(err, a, b, c);
	return 0;
}

SEC("exec=/bin/true;h6b_fetch1=scaled p->x")
int h6b_fetch1(void *ctx, long err, long a)
{
	note(err, a, 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
