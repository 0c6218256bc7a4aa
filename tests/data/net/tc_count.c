// SPDX-License-Identifier: GPL-2.0
/* tc_count.c - one bpf-output record per test datagram that passes a tc hook (direct action).
 *
 * Two programs: tc_in on the clsact ingress hook, tc_out on egress. The interface comes from
 * --dev unless the test defines TC_DEV_SETTING, e.g. "dev=veth0;".
 */
#include "net_record.h"

#ifndef TC_DEV_SETTING
#define TC_DEV_SETTING ""
#endif
#define TC_ACT_OK 0

struct __bpf_stdout_map __bpf_stdout__ SEC(".maps");

static __always_inline int emit(struct __sk_buff *skb, const char hook[4])
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct frame *f = test_datagram(data, data_end);
	struct net_record rec;

	if (f) {
		fill_record(&rec, hook, f, skb->len);
		bpf_perf_event_output(skb, &__bpf_stdout__, BPF_F_CURRENT_CPU, &rec, sizeof(rec));
	}
	return TC_ACT_OK;
}

SEC(TC_DEV_SETTING "tc/ingress")
int tc_in(struct __sk_buff *skb)
{
	return emit(skb, "tci");
}

SEC(TC_DEV_SETTING "tc/egress")
int tc_out(struct __sk_buff *skb)
{
	return emit(skb, "tce");
}

char _license[] SEC("license") = "GPL";
