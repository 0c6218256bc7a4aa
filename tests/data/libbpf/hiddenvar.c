/* Review: __hidden (STV_HIDDEN) global variables. libbpf makes their BTF VAR static, and a data
 * section whose variables are all static or hidden is created without BPF_F_MMAPABLE (nothing of
 * it is exposed to a skeleton): here .data.es_hid and .bss; .data keeps a visible variable. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__hidden int es_hidden_data SEC(".data.es_hid") = 1;
__hidden int es_hidden_bss;
int es_visible = 3;
__hidden int es_hidden_too = 4;

SEC("socket")
int hiddenvar_prog(struct __sk_buff *skb)
{
	return es_hidden_data + es_hidden_bss + es_visible + es_hidden_too;
}

char LICENSE[] SEC("license") = "GPL";
