/* Review: two custom data sections whose names agree in their first 15 characters. libbpf names
 * a .data.* map after its section, cut to BPF_OBJ_NAME_LEN - 1 (no object-name prefix), so both
 * maps get the kernel name '.data.es_trunca'; it creates both under that name. SAME=0 keeps the
 * names apart ('.data.es_a', '.data.es_b'). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#if SAME
#define SEC_A ".data.es_truncated_a"
#define SEC_B ".data.es_truncated_b"
#else
#define SEC_A ".data.es_a"
#define SEC_B ".data.es_b"
#endif

int es_first SEC(SEC_A) = 1;
int es_second SEC(SEC_B) = 2;

SEC("socket")
int dupnames_prog(struct __sk_buff *skb)
{
	return es_first + es_second;
}

char LICENSE[] SEC("license") = "GPL";
