/* bytes.c - which byte arrays a typed record shows as text: char arrays only (as bpftool's BTF
 * dumper decides); arrays of unsigned char, signed char and __u8 are numbers. */
#include <linux/types.h>

struct bytes {
	char name[4];
	unsigned char raw[4];
	signed char deltas[2];
	__u8 mac[2];
};

struct bytes *unused_bytes __attribute__((unused));
