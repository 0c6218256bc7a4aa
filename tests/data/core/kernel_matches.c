// SPDX-License-Identifier: GPL-2.0
/* kernel_matches.c - bpf_core_type_matches and its neighbours against the running kernel's
 * types, through local flavours, each weighted by its own power of two so that every answer
 * is an immediate of its own (tests/test_core_rules.py loads it relocated by evspec and with
 * the raw records for the kernel's own CO-RE; the translated programs must be equal).
 * Each case is one where a wrong rule answers otherwise than the kernel. The kernel compares
 * two levels deep (MAX_TYPES_MATCH_DEPTH in kernel/bpf/btf.c; libbpf: 32) and fails the load
 * past them, so no case nests a struct in a struct or a prototype in a member. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct list_head___same { struct list_head___same *next, *prev; };
struct list_head___more { struct list_head___more *next, *prev, *extra; };
struct list_head___renamed { struct list_head___renamed *next, *previous; };
struct list_head___int { long next; struct list_head___int *prev; };
enum pid_type___subset { PIDTYPE_PID___subset, PIDTYPE_TGID___subset };
enum pid_type___stranger { PIDTYPE_PID___stranger, NOT_A_PID_TYPE___stranger };
enum pid_type___wide { PIDTYPE_PID___wide = 1ULL << 40 };
typedef int pid_t___signed;
typedef unsigned int pid_t___unsigned;
typedef long pid_t___long;
struct ethhdr___same { unsigned char h_dest[6]; };
struct ethhdr___short { unsigned char h_dest[5]; };
struct ethhdr___signed { signed char h_dest[6]; };
struct callback_head___x;
typedef void (*rcu_callback_t___same)(struct callback_head___x *);
typedef void (*rcu_callback_t___args)(struct callback_head___x *, int);
typedef int (*rcu_callback_t___ret)(struct callback_head___x *);
typedef void (*rcu_callback_t___other)(struct list_head___same *);
union callback_head___union { union callback_head___union *next; };

SEC("raw_syscalls:sys_enter")
int matches(void *ctx)
{
	long v = 0;

	v |= bpf_core_type_matches(struct list_head___same) << 0;
	v |= bpf_core_type_matches(struct list_head___more) << 1;
	v |= bpf_core_type_matches(struct list_head___renamed) << 2;
	v |= bpf_core_type_matches(struct list_head___int) << 3;
	v |= bpf_core_type_matches(enum pid_type___subset) << 4;
	v |= bpf_core_type_matches(enum pid_type___stranger) << 5;
	v |= bpf_core_type_matches(enum pid_type___wide) << 6;
	v |= bpf_core_type_matches(pid_t___signed) << 7;
	v |= bpf_core_type_matches(pid_t___unsigned) << 8;
	v |= bpf_core_type_matches(pid_t___long) << 9;
	v |= bpf_core_type_matches(struct ethhdr___same) << 10;
	v |= bpf_core_type_matches(struct ethhdr___short) << 11;
	v |= bpf_core_type_matches(struct ethhdr___signed) << 12;
	v |= bpf_core_type_matches(rcu_callback_t___same) << 13;
	v |= bpf_core_type_matches(rcu_callback_t___args) << 14;
	v |= bpf_core_type_matches(rcu_callback_t___ret) << 15;
	v |= bpf_core_type_matches(rcu_callback_t___other) << 16;
	v |= bpf_core_type_matches(union callback_head___union) << 17;
	return v;
}

SEC("raw_syscalls:sys_enter")
int compat(void *ctx)
{
	long v = 0;

	v |= bpf_core_type_exists(struct list_head___more) << 0;
	v |= bpf_core_type_exists(enum pid_type___wide) << 1;
	v |= bpf_core_type_exists(pid_t___unsigned) << 2;
	v |= bpf_core_type_exists(struct ethhdr___short) << 3;
	v |= bpf_core_type_exists(rcu_callback_t___args) << 4;
	v |= bpf_core_type_exists(union callback_head___union) << 5;
	v |= bpf_core_type_size(struct ethhdr___short) << 6;
	return v;
}
char _license[] SEC("license") = "GPL";
