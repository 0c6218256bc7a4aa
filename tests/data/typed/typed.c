// SPDX-License-Identifier: GPL-2.0
/* typed.c - typed output maps (map:NAME.type=TYPE, COMPAT 1.14): every getppid() of the workload
 * puts a `struct event` into the ring buffer `events` and a `struct out` into __bpf_stdout__
 * (a perf event array: perf record's automatic bpf-output event). `counters` is an ARRAY map
 * (not an output map: .type refuses it); `unused_event` and `unused_out` put a .bss map in the object.
 * The tracepoint program runs for every task's getppid(): only a task whose comm is targ_comm
 * (var:targ_comm='NAME', the tests' copy of the workload under a name of their own) counts. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "workload.h" /* targ_comm, is_workload() */

enum kind { KIND_NONE = 0, KIND_ENTER = 1, KIND_EXIT = 2 };

struct event {
	__u32 pid;
	__u64 ts;
	char comm[16];
	enum kind k;
};

struct inner {
	__u16 a;
	__u8 b;
};

struct out {
	__u32 seq;
	struct inner nested;
	char tag[4];
};

typedef struct out out_t;

/* clang keeps in BTF only the types of globals and functions: these pointers keep struct event and out_t */
struct event *unused_event __attribute__((unused));
out_t *unused_out __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
} __bpf_stdout__ SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, __u64);
} counters SEC(".maps");

SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	int zero = 0;
	__u64 *n = bpf_map_lookup_elem(&counters, &zero);
	struct event *e;
	out_t o = {};

	if (!n || !is_workload())
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->pid = bpf_get_current_pid_tgid() >> 32;
		e->ts = bpf_ktime_get_ns();
		bpf_get_current_comm(e->comm, sizeof(e->comm));
		e->k = KIND_ENTER;
		bpf_ringbuf_submit(e, 0);
	}
	o.seq = *n;
	o.nested.a = 7;
	o.nested.b = 9;
	__builtin_memcpy(o.tag, "ok!", 4);
	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, &o, sizeof(o));
	__sync_fetch_and_add(n, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
