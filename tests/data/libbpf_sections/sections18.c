// One program per section name libbpf 1.8 added since 1.1 (the 35 entries of
// tests/test_progtypes.py's ADDED_SINCE_11, with a target where the entry takes one), and 'usdt',
// whose attach type libbpf 1.8 chooses by probing the kernel. Built with -DALL: every program;
// with -DONLY=N: program N alone (bpftool loads an object whole). Program N is named PFX##N
// (-DPFX=b18_: the programs bpftool loads, e18_: evspec's). tests/test_sections_18.py.

#define SEC(name) __attribute__((section(name), used))
#define CAT(a, b) a##b
#define XCAT(a, b) CAT(a, b)
#define NAME(n) XCAT(PFX, n)

#ifndef ONLY
#define ONLY -1
#endif

char LICENSE[] SEC("license") = "GPL";

#if defined(ALL) || ONLY == 0
SEC("kprobe.session/do_nanosleep") int NAME(00)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 1
SEC("uprobe.multi//bin/true:main") int NAME(01)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 2
SEC("uretprobe.multi//bin/true:main") int NAME(02)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 3
SEC("uprobe.session//bin/true:main") int NAME(03)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 4
SEC("uprobe.multi.s//bin/true:main") int NAME(04)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 5
SEC("uretprobe.multi.s//bin/true:main") int NAME(05)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 6
SEC("uprobe.session.s//bin/true:main") int NAME(06)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 7
SEC("usdt//bin/true:provider:probe") int NAME(07)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 8
SEC("usdt") int NAME(08)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 9
SEC("usdt.s//bin/true:provider:probe") int NAME(09)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 10
SEC("tc/ingress") int NAME(10)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 11
SEC("tc/egress") int NAME(11)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 12
SEC("tcx/ingress") int NAME(12)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 13
SEC("tcx/egress") int NAME(13)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 14
SEC("netkit/primary") int NAME(14)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 15
SEC("netkit/peer") int NAME(15)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 16
SEC("tracepoint.s/syscalls/sys_enter_nanosleep") int NAME(16)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 17
SEC("tp.s/syscalls/sys_enter_nanosleep") int NAME(17)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 18
SEC("raw_tracepoint.s/sched_switch") int NAME(18)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 19
SEC("raw_tp.s/sched_switch") int NAME(19)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 20
SEC("tp_btf.s/sched_switch") int NAME(20)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 21
SEC("fsession/vfs_read") int NAME(21)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 22
SEC("fsession.s/vfs_read") int NAME(22)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 23
SEC("fsession.multi/vfs_read") int NAME(23)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 24
SEC("fsession.multi.s/vfs_read") int NAME(24)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 25
SEC("fentry.multi/vfs_read") int NAME(25)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 26
SEC("fexit.multi/vfs_read") int NAME(26)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 27
SEC("fentry.multi.s/vfs_read") int NAME(27)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 28
SEC("fexit.multi.s/vfs_read") int NAME(28)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 29
SEC("sk_skb/verdict") int NAME(29)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 30
SEC("cgroup/connect_unix") int NAME(30)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 31
SEC("cgroup/sendmsg_unix") int NAME(31)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 32
SEC("cgroup/recvmsg_unix") int NAME(32)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 33
SEC("cgroup/getpeername_unix") int NAME(33)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 34
SEC("cgroup/getsockname_unix") int NAME(34)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 35
SEC("struct_ops.s/init") int NAME(35)(void *ctx) { return 0; }
#endif

#if defined(ALL) || ONLY == 36
SEC("netfilter") int NAME(36)(void *ctx) { return 0; }
#endif
