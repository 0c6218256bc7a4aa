// SPDX-License-Identifier: GPL-2.0
/* kinds.c - the global variable kinds var:NAME=VALUE terms set beyond vars.c's (floats, 64-bit and
 * typedef'd integers, a signed enum) and the kinds they refuse (an array of integers, a union).
 * On each getppid() of the "varswork" workload the program copies every settable global into the
 * one entry of 'seen' (floats as their bits), for tests/test_var_terms.py. */
#include <linux/bpf.h>
#include <asm/unistd.h>
#include <bpf/bpf_helpers.h>

typedef int my_pid_t;
enum level { LEVEL_LOW = -1, LEVEL_HIGH = 1 };
union either {
	__u32 u;
	float f;
};

const volatile double ratio = 0;
const volatile float scale = 0;
const volatile my_pid_t targ_tgid = 0;
const volatile __s64 offset_ns = 0;
const volatile __u64 mask = 0;
const volatile enum level level = LEVEL_HIGH;
const volatile __u32 cpus[4] = {};
const volatile union either either = {};

struct seen {
	__u64 ratio_bits;
	__u32 scale_bits;
	__s32 targ_tgid;
	__s64 offset_ns;
	__u64 mask;
	__s32 level;
	__u32 cpu0;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen);
} seen SEC(".maps");

struct sys_enter {
	__u64 common;
	long id;
	unsigned long args[6];
};

SEC("raw_syscalls:sys_enter")
int copy_kinds(struct sys_enter *ctx)
{
	char comm[16];
	__u32 zero = 0;
	struct seen *s;

	if (ctx->id != __NR_getppid)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	if (comm[0] != 'v' || comm[1] != 'a' || comm[2] != 'r' || comm[3] != 's')
		return 0;
	s = bpf_map_lookup_elem(&seen, &zero);
	if (!s)
		return 0;
	s->ratio_bits = *(const volatile __u64 *)&ratio;
	s->scale_bits = *(const volatile __u32 *)&scale;
	s->targ_tgid = targ_tgid;
	s->offset_ns = offset_ns;
	s->mask = mask;
	s->level = level;
	s->cpu0 = cpus[0] + either.u;
	return 0;
}

char _license[] SEC("license") = "GPL";
