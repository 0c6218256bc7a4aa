// SPDX-License-Identifier: GPL-2.0
/* xdp_count.c - one bpf-output record per test datagram an interface receives (XDP).
 *
 * The section is "xdp" (the interface comes from --dev) unless the test defines XDP_SECTION,
 * e.g. "dev=veth0;mode=skb;xdp".
 */
#include "net_record.h"

#ifndef XDP_SECTION
#define XDP_SECTION "xdp"
#endif

struct __bpf_stdout_map __bpf_stdout__ SEC(".maps");

SEC(XDP_SECTION)
int xdp_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct frame *f = test_datagram(data, data_end);
	struct net_record rec;

	if (f) {
		fill_record(&rec, "xdp", f, data_end - data);
		bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &rec, sizeof(rec));
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
