/* struct_ops.c - an object with a struct_ops map (SEC(".struct_ops.link"): libbpf 1.8 creates it
 * and registers it through a BPF link) whose members are two programs, an unused struct_ops
 * program, and an ordinary socket program. evspec does not create struct_ops maps: the map and
 * its two programs are refused by name, the unused program as libbpf 1.8 refuses it (EINVAL), and
 * the socket program loads (tests/test_verify_isolation.py). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct sock;

/* the members used here of the kernel's struct tcp_congestion_ops, matched by name as libbpf does */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
};

SEC("struct_ops/evspec_ssthresh")
__u32 evspec_ssthresh(unsigned long long *ctx)
{
	return 2;
}

SEC("struct_ops/evspec_cong_avoid")
void evspec_cong_avoid(unsigned long long *ctx)
{
}

SEC("struct_ops/evspec_unused")
__u32 evspec_unused(unsigned long long *ctx)
{
	return 0;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops evspec_ca = {
	.ssthresh = (void *)evspec_ssthresh,
	.cong_avoid = (void *)evspec_cong_avoid,
	.undo_cwnd = (void *)evspec_ssthresh,
	.name = "evspec_ca",
};

SEC("socket")
int plain(struct __sk_buff *skb)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
