/* records.h - what the fixtures of tests/test_records_libbpf.py share: whether the current task is
 * the workload (its comm is "recwork"), and a per-task sequence number, so that a record says
 * the same for the same workload whoever loaded the program and whatever else runs. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} seqs SEC(".maps");

static __always_inline int is_workload(void)
{
	union {
		char text[16];
		__u64 words[2];
	} comm;

	bpf_get_current_comm(comm.text, sizeof(comm.text));
	return comm.words[0] == 0x006b726f77636572ULL && comm.words[1] == 0; /* "recwork", little-endian */
}

/* 0, 1, 2, ... for the records of task PID */
static __always_inline __u64 next_seq(__u32 pid)
{
	__u64 first = 0, *seq = bpf_map_lookup_elem(&seqs, &pid);

	if (!seq) {
		bpf_map_update_elem(&seqs, &pid, &first, BPF_NOEXIST);
		seq = bpf_map_lookup_elem(&seqs, &pid);
		if (!seq)
			return ~0ULL;
	}
	return __sync_fetch_and_add(seq, 1);
}
