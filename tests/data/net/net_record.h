/* net_record.h - what the xdp and tc test programs emit for each test datagram. */
#ifndef NET_RECORD_H
#define NET_RECORD_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* The UDP port the tests send to; other traffic on the interface (ARP, IPv6 neighbour
 * discovery) is let through without a record. */
#define TEST_PORT 31337
#define MARKER_LEN 8

struct __bpf_stdout_map {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
};

/* One bpf-output record: which hook saw the packet, its length on the wire (Ethernet frame),
 * and the first MARKER_LEN bytes of the UDP payload (the test puts a marker there). */
struct net_record {
	char hook[4];
	__u32 len;
	char marker[MARKER_LEN];
};

struct frame {
	/* Ethernet */
	__u8 dst[6];
	__u8 src[6];
	__be16 proto;
	/* IPv4 without options */
	__u8 ver_ihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag;
	__u8 ttl;
	__u8 ip_proto;
	__be16 check;
	__be32 saddr;
	__be32 daddr;
	/* UDP */
	__be16 sport;
	__be16 dport;
	__be16 ulen;
	__be16 ucheck;
	char payload[MARKER_LEN];
} __attribute__((packed));

/* The test datagram's frame at [data, data_end), or NULL for any other packet. */
static __always_inline struct frame *test_datagram(void *data, void *data_end)
{
	struct frame *f = data;

	if ((void *)(f + 1) > data_end)
		return 0;
	if (f->proto != __builtin_bswap16(0x0800) || f->ver_ihl != 0x45 || f->ip_proto != 17)
		return 0;
	if (f->dport != __builtin_bswap16(TEST_PORT))
		return 0;
	return f;
}

static __always_inline void fill_record(struct net_record *rec, const char hook[4], struct frame *f, __u32 len)
{
	__builtin_memcpy(rec->hook, hook, 4);
	rec->len = len;
	__builtin_memcpy(rec->marker, f->payload, MARKER_LEN);
}

#endif
