// SPDX-License-Identifier: GPL-2.0
/* kinds.c - BTF kinds and layouts the fix-up must get right: global and static data in .data,
 * .bss, .rodata and a custom .data.* section, a function-local static, float and double, decl and
 * type tags, a perf event array declared with BTF key/value types (the kernel refuses BTF for it),
 * a bpf-to-bpf call and a bpf_loop callback (which needs func_info). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define __tag(x) __attribute__((btf_decl_tag(x)))
#define __user_tag __attribute__((btf_type_tag("user")))

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, int);
	__type(value, double);
	__uint(max_entries, 4);
} scaled SEC(".maps");

struct sample {
	int pid __tag("pid");
	float ratio;
	int __user_tag *where;
} __tag("sample");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, int);
	__type(value, struct sample);
	__uint(max_entries, 4);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__type(key, int);
	__type(value, int);
	__uint(max_entries, 1);
} out SEC(".maps");

static int hidden_count;
int calls;
int seed = 7;
static int static_seed = 9;
const volatile int limit = 3;
char custom[12] SEC(".data.custom") = "custom";

static __attribute__((noinline)) int twice(int x)
{
	return 2 * x + seed + static_seed;
}

static long step(__u32 index, void *ctx)
{
	hidden_count += index;
	return 0;
}

SEC("syscalls:sys_enter_getppid")
int kinds(void *ctx)
{
	static int local_static;
	struct sample s = { .pid = 1, .ratio = 0.5f };
	int key = 0;
	double value = 1.5;

	local_static++;
	calls += twice(limit);
	custom[0]++;
	bpf_loop(4, step, (void *)0, 0);
	bpf_map_update_elem(&scaled, &key, &value, BPF_ANY);
	bpf_map_update_elem(&samples, &key, &s, BPF_ANY);
	bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, &s, sizeof(s.pid));
	return 0;
}

char _license[] SEC("license") = "GPL";
