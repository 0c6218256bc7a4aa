// SPDX-License-Identifier: GPL-2.0
/* vars.c - global variables for var:NAME=VALUE terms (COMPAT 1.14) and maps for --dump-maps.
 * On each getppid() (seen at raw_syscalls:sys_enter) of a task whose comm is targ_comm (and whose pid is targ_pid, when set), the
 * program counts the call (n = 1, 2, ...), puts n in a log2 histogram, adds it to the bucket n % 4
 * of a hash of structs, and copies every global it was given into the one entry of 'seen'. */
#include <linux/bpf.h>
#include <asm/unistd.h>
#include <bpf/bpf_helpers.h>

enum mode { MODE_OFF, MODE_COUNT, MODE_TRACE };

struct cfg {
	int a;
	int b;
};

const volatile __u32 targ_pid = 0;
const volatile __s8 delta = 0;
const volatile _Bool verbose = 0;
const volatile enum mode mode = MODE_OFF;
const volatile char targ_comm[16] = {};
const volatile struct cfg cfg = {};
__u32 seed = 7;          /* .data */
__u64 calls = 0;         /* .bss */
int *where = 0;          /* .bss: a pointer, refused by var: */

struct seen {
	__u32 pid_filter;
	__s32 delta;
	__u32 verbose;
	enum mode mode;
	char comm[16];
	__u32 seed;
	__u32 pad;
	__u64 calls;
};

struct stats {
	__u64 calls;
	__u64 sum;
	__s32 delta;
	enum mode mode;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} calls_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct stats);
} stats SEC(".maps");

static __always_inline int log2l(__u64 v)
{
	int r = 0;

	for (int i = 0; i < 63; i++) {
		if (v <= 1)
			break;
		v >>= 1;
		r++;
	}
	return r;
}

struct sys_enter {
	__u64 common;
	long id;
	unsigned long args[6];
};

SEC("raw_syscalls:sys_enter")
int on_getppid(struct sys_enter *ctx)
{
	char comm[16];
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u32 zero = 0, slot, bucket;
	struct seen *s;
	struct stats *st, init = {};
	__u64 *count, n;

	if (ctx->id != __NR_getppid)
		return 0;
	if (targ_pid && pid != targ_pid)
		return 0;
	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < 16; i++) {
		if (comm[i] != targ_comm[i])
			return 0;
		if (!comm[i])
			break;
	}
	n = __sync_add_and_fetch(&calls, 1);
	slot = log2l(n);
	count = bpf_map_lookup_elem(&calls_hist, &slot);
	if (count)
		__sync_fetch_and_add(count, 1);
	bucket = n % 4;
	st = bpf_map_lookup_elem(&stats, &bucket);
	if (!st) {
		bpf_map_update_elem(&stats, &bucket, &init, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&stats, &bucket);
		if (!st)
			return 0;
	}
	st->calls++;
	st->sum += n;
	st->delta = delta;
	st->mode = mode;
	s = bpf_map_lookup_elem(&seen, &zero);
	if (!s)
		return 0;
	s->pid_filter = targ_pid;
	s->delta = delta;
	s->verbose = verbose;
	s->mode = mode;
	for (int i = 0; i < 16; i++)
		s->comm[i] = targ_comm[i];
	s->seed = seed + cfg.a;
	s->calls = n;
	if (where)
		s->pad = 1;
	return 0;
}

char _license[] SEC("license") = "GPL";
