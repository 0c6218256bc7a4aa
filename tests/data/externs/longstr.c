/* A Kconfig string longer than its char array: libbpf cuts it (keeping the NUL) and warns;
 * tests/test_externs_live.py checks evspec cuts it alike and says so. CONFIG_CC_VERSION_TEXT is
 * set by every kernel build ("gcc ..." or "clang ..."), longer than 3 characters. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern char CONFIG_CC_VERSION_TEXT[4] __kconfig;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, char[4]);
} out SEC(".maps");

SEC("raw_tp/sys_enter")
int copy_text(void *ctx)
{
	int key = 0;
	char *v = bpf_map_lookup_elem(&out, &key);

	if (!v)
		return 0;
	__builtin_memcpy(v, CONFIG_CC_VERSION_TEXT, 4);
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
