"""Codes of the kernel runtime (``EK0xx``): failures of bpf(2), perf_event_open(2) and friends."""

from __future__ import annotations

from evspec.codes import CodeInfo

PERMISSION = "EK001"
MEMLOCK = "EK002"
ATTR_TOO_BIG = "EK003"
NOT_FOUND = "EK004"
INVALID_ARGUMENT = "EK005"
NO_SPACE = "EK006"
VERIFIER = "EK007"
SYSCALL_FAILED = "EK008"
UNSUPPORTED_ARCH = "EK009"
RELOCATION = "EK010"
PROGRAM_TYPE = "EK011"
BAD_SIZE = "EK012"
RING_BUFFER = "EK013"
BTF_REJECTED = "EK014"
PINNED_MAP = "EK015"
NUMA_NODE = "EK016"
FUNC_INFO_NEEDED = "EK017"

# Recording: applying map settings, attaching programs, the workload (EK101-EK109).
APPLY_FAILED = "EK101"
NO_EVENT_FOR_MAP = "EK102"
ATTACH_UNSUPPORTED = "EK103"
BAD_SECTION = "EK104"
NO_TRACEPOINT = "EK105"
WORKLOAD = "EK106"
OBJECT = "EK107"

# kprobes and uprobes: targets, tracefs entries, the probe PMUs (EK110-EK129).
PROBE_TARGET = "EK110"
PROBE_FUNCTION = "EK111"
PROBE_ADDRESS = "EK112"
NO_KPROBES = "EK113"
NO_UPROBES = "EK114"
PROBE_EXISTS = "EK115"
PROBE_CREATE = "EK116"
PROBE_REMOVE = "EK117"
PROBE_SETTING = "EK118"
PROBE_TOO_MANY = "EK120"
PROBE_NAME_TOO_LONG = "EK121"

# Argument prologues of probes (EK130-EK139).
PROBE_ARG_SYNTAX = "EK130"
PROBE_ARG_REGISTER = "EK131"
PROBE_ARG_TOO_MANY = "EK132"
PROBE_ARG_NO_DWARF = "EK133"
PROBE_ARG_NOT_FOUND = "EK134"
PROBE_ARG_OPTIMISED_OUT = "EK135"
PROBE_ARG_LOCATION = "EK136"
PROBE_ARG_TYPE = "EK137"
PROBE_ARG_SYMBOL = "EK138"
PROLOGUE_REJECTED = "EK139"

# Network hooks: XDP and tc programs attached through netlink (EK140-EK149).
NET_NO_DEVICE = "EK140"
NET_UNKNOWN_DEVICE = "EK141"
NET_XDP_BUSY = "EK142"
NET_XDP_MODE = "EK143"
NET_HOOK_TWICE = "EK144"
NET_ATTACH_FAILED = "EK145"
NET_DETACH_FAILED = "EK146"

# Capture files (EK150-EK159).
PERF_DATA_CORRUPT = "EK150"
PERF_DATA_UNSUPPORTED = "EK151"
PERF_DATA_WRITE = "EK152"

# Object BTF for the kernel, tracepoint formats (EK160-EK169).
BTF_FIXUP = "EK160"
TRACEPOINT_FORMAT = "EK161"

# Recording: what the kernel refuses at attach time, what record cannot sample (EK170-EK189).
PAST_THE_RECORD = "EK170"
UNSAMPLED_EVENT = "EK171"

CODES: tuple[CodeInfo, ...] = (
    CodeInfo(
        PERMISSION,
        "operation not permitted: evspec needs root",
        "The kernel refused a bpf(2) or perf_event_open(2) call with EPERM or EACCES. Loading BPF\n"
        "programs and creating maps needs CAP_BPF (CAP_SYS_ADMIN before Linux 5.8); opening\n"
        "tracepoint and system-wide events and attaching programs to them needs CAP_PERFMON\n"
        "(CAP_SYS_ADMIN before 5.8). The message names the capability the process lacks.",
        fix="Run evspec as root (sudo), or grant the capability named in the message.",
    ),
    CodeInfo(
        MEMLOCK,
        "locked-memory limit too low for BPF maps and programs",
        "Kernels before 5.11 charge BPF maps and programs against RLIMIT_MEMLOCK; when the limit is\n"
        "reached bpf(2) fails with EPERM even for root. evspec raises the limit itself when it is\n"
        "allowed to (root or CAP_SYS_RESOURCE); otherwise this error reports the current limit.",
        fix="Run as root, or raise the limit: `ulimit -l unlimited`.",
    ),
    CodeInfo(
        ATTR_TOO_BIG,
        "the kernel does not know a field evspec set (E2BIG)",
        "The attribute structure passed to bpf(2) or perf_event_open(2) has non-zero fields past the\n"
        "end of the structure this kernel knows (the kernel accepts a longer structure only when the\n"
        "extra bytes are zero). For perf_event_open the kernel reports the size it knows, and the\n"
        "message names the fields set beyond it (config3 needs Linux 6.3, for example).",
        fix="Use a newer kernel, or do without the feature named in the message.",
    ),
    CodeInfo(
        NOT_FOUND,
        "the kernel reported ENOENT for a command",
        "A map element, an object id or a tracepoint did not exist for the command named in the\nmessage.",
    ),
    CodeInfo(
        INVALID_ARGUMENT,
        "the kernel rejected an argument (EINVAL)",
        "The command named in the message was given a value the kernel does not accept: an unknown\n"
        "map or program type, an impossible size, a flag this kernel lacks.",
    ),
    CodeInfo(
        NO_SPACE,
        "the kernel reported ENOSPC for a command",
        "A map is full (no free slot for a new key), or a buffer was too small.",
    ),
    CodeInfo(
        VERIFIER,
        "the BPF verifier rejected a program",
        "The kernel's verifier refused the program. The summary names the failing instruction and,\n"
        "when the object has line information, the source line; the full verifier log is kept with\n"
        "the error (`-v` prints it).",
        fix="Fix the program as the verifier message says (bounds checks, NULL checks, license).",
    ),
    CodeInfo(
        SYSCALL_FAILED,
        "a kernel call failed",
        "A bpf(2), perf_event_open(2), ioctl(2) or mmap(2) call failed with an error number that has\n"
        "no more specific code; the message names the command and the error.",
    ),
    CodeInfo(
        UNSUPPORTED_ARCH,
        "the kernel layer does not support this architecture",
        "evspec issues system calls by number and knows those of x86_64 and aarch64 only.",
    ),
    CodeInfo(
        RELOCATION,
        "a program's relocation cannot be applied",
        "An instruction named by a relocation is not the kind of instruction the relocation needs\n"
        "(ld_imm64 for maps and global data, call for bpf-to-bpf calls), or its target map, data\n"
        "section or function does not exist in the object.",
    ),
    CodeInfo(
        PROGRAM_TYPE,
        "no program type for a program",
        "Every program of an object needs a BPF program type, decided from its section name; the\n"
        "loader was not given one for the program named in the message.",
    ),
    CodeInfo(
        BAD_SIZE,
        "a key or value has the wrong size for its map",
        "The bytes given for a map key or value do not match the map's key_size or value_size.",
    ),
    CodeInfo(
        RING_BUFFER,
        "a perf ring buffer cannot be read",
        "The ring buffer holds a record that does not fit its header size, or the event samples\n"
        "fields (sample_type bits) that the reader does not decode.",
    ),
    CodeInfo(
        BTF_REJECTED,
        "the kernel refused the object's BTF",
        "BPF_BTF_LOAD failed. The object is loaded without BTF (maps lose their key/value type\n"
        "information, nothing else changes); the BTF log is kept with the error.",
    ),
    CodeInfo(
        PINNED_MAP,
        "a map pinned by name cannot be reused or pinned",
        "A map declared with __uint(pinning, LIBBPF_PIN_BY_NAME) is pinned at PIN_ROOT/NAME\n"
        "(/sys/fs/bpf by default). A map already pinned there is reused when its type, key and\n"
        "value sizes, max_entries, flags and map_extra equal the declaration's (as libbpf does);\n"
        "otherwise the object is refused, naming what differs. Pinning fails when the pin root is\n"
        "not on a bpffs mount or is not writable.",
        "",
        "remove the stale pin (rm /sys/fs/bpf/NAME) or make the declaration match it",
    ),
    CodeInfo(
        NUMA_NODE,
        "a map's numa_node does not exist on this machine",
        "The map is declared with BPF_F_NUMA_NODE and a numa_node the kernel refused (EINVAL):\n"
        "the node is not online here. libbpf refuses such a map the same way.",
        "",
        "use a node listed in /sys/devices/system/node/online, or drop BPF_F_NUMA_NODE",
    ),
    CodeInfo(
        FUNC_INFO_NEEDED,
        "a program with global functions cannot be loaded without its func info",
        "The kernel refused the program's BTF func/line info (or the object's BTF). Without func\n"
        "info the verifier would treat its global functions as static ones, which changes what\n"
        "the program means, so it is not loaded again without it; the kernel's reason is kept.",
    ),
    CodeInfo(
        "EK101",
        "map configuration cannot be applied (perf: Apply config to BPF failed)",
        "evspec record writes map: terms into the loaded maps after the events are opened, with perf\n"
        "record's apply-time checks: an event put into a PERF_EVENT_ARRAY must not inherit, must be\n"
        "opened for one thread or system-wide, must be a raw, hardware or bpf-output event, and the\n"
        "slots written must not exceed the event's CPU slots.",
        "-e cycles -e './x.o/map:pmu_map.event=cycles/'",
        "add -i (or no-inherit to the event), use bpf-output/no-inherit,name=N/, or write fewer slots\n"
        "with an index list such as map:channel.event[0]=N",
    ),
    CodeInfo(
        "EK102",
        "a map term names an event that was not opened",
        "A map:NAME.event=EVT term refers to an event the recording session did not open, so there is\n"
        "no file descriptor to store in the map.",
        fix="define the event (for example bpf-output/no-inherit,name=EVT/) before the object",
    ),
    CodeInfo(
        "EK103",
        "this program's attach kind is not supported by evspec record yet",
        "The program's section asks for an attach point (kprobe, uprobe, network hook, ...) that this\n"
        "version of evspec record cannot create. Tracepoint programs are supported.",
        fix="use a tracepoint section (SYS:EVENT), or load the object with another tool",
    ),
    CodeInfo(
        "EK104",
        "a program's section name cannot be used to attach it",
        "The ELF section of a program does not describe an attach point evspec understands.",
        fix="see 'evspec inspect OBJ' for how each section was read",
    ),
    CodeInfo(
        "EK105",
        "the tracepoint a program attaches to does not exist",
        "The tracepoint named by the program's section has no id in tracefs on this machine.",
        fix="list the tracepoints with 'evspec list tracepoint'",
    ),
    CodeInfo(
        "EK106",
        "the command to record cannot be run",
        "evspec record forks and executes the command after '--'; it does not exist, is not executable,\n"
        "or the process given with -p does not exist.",
        fix="check the command after '--' (or the -p PID)",
    ),
    CodeInfo(
        "EK107",
        "a BPF object of the recording cannot be loaded",
        "Reading, compiling or loading one of the BPF objects named in the event strings failed; the\n"
        "message says which and why.",
        fix="run 'evspec check --system live' and 'evspec inspect OBJ' on it",
    ),
    CodeInfo(
        PROBE_ARG_SYNTAX,
        "a probe argument cannot be fetched by a BPF prologue",
        "A fetch argument of a probe definition (EVENT=FUNC ARG...) is not one the argument prologue\n"
        "can read: it must be a register (%di, %x0), a dereference (+8(%di)), $stackN, $stack,\n"
        "$argN, $retval (return probes), @SYMBOL[+OFF], or a named parameter of a target built with -g\n"
        "(with -> and . member accesses). $comm, $params, $vars and string types are not supported.",
        fix="fetch the value with one of the supported forms, or read it in the program itself",
    ),
    CodeInfo(
        PROBE_ARG_REGISTER,
        "a probe argument names a register this architecture does not have",
        "Register names are those of the kernel's pt_regs: on x86_64 %ax %bx %cx %dx %si %di %bp %sp\n"
        "%r8-%r15 %ip %flags (the 64-bit spellings %rax ... are accepted too); on aarch64 %x0-%x30,\n"
        "%lr, %sp, %pc, %pstate.",
        fix="use a register name of the machine the probe runs on",
    ),
    CodeInfo(
        PROBE_ARG_TOO_MANY,
        "a probe definition fetches more than three arguments",
        "The argument prologue passes fetched values to the program in registers R3-R5 (R2 holds the\n"
        "error flag), as perf did, so at most three arguments can be fetched per probe.",
        fix="fetch at most three arguments; read more values in the program with bpf_probe_read_*",
    ),
    CodeInfo(
        PROBE_ARG_NO_DWARF,
        "a named probe argument needs debug information the target lacks",
        "Named parameters are located through the DWARF debug information of the probed binary; it\n"
        "has no .debug_info, or no DW_TAG_subprogram for the probed function.",
        fix="build the target with -g, or fetch the argument by register (%di, %x0, $argN)",
    ),
    CodeInfo(
        PROBE_ARG_NOT_FOUND,
        "a named probe argument is not a parameter (or member) of the probed function",
        "The function's DWARF entry has no formal parameter of that name, or a -> / . access names\n"
        "a member the parameter's structure type does not have.",
        fix="check the function's signature; the message lists the parameters it has",
    ),
    CodeInfo(
        PROBE_ARG_OPTIMISED_OUT,
        "a named probe argument has no location at the probe address (optimised out)",
        "The compiler's debug information gives the parameter no location at the probed address: it\n"
        "was optimised out there, or is only stored later (unoptimised code keeps parameters in the\n"
        "stack frame only after the function's prologue).",
        fix="probe at another address, or fetch the value by register at the function's entry",
    ),
    CodeInfo(
        PROBE_ARG_LOCATION,
        "a named probe argument's DWARF location cannot be turned into fetch code",
        "The parameter's location expression uses operations the prologue cannot evaluate (pieces,\n"
        "DW_OP_entry_value, computed values, registers that are not in pt_regs).",
        fix="fetch the value by register or stack slot instead",
    ),
    CodeInfo(
        PROBE_ARG_TYPE,
        "a probe argument has a type the prologue cannot produce",
        "Supported types: u8 u16 u32 u64, s8 s16 s32 s64, x8 x16 x32 x64 and bitfields\n"
        "b<width>@<offset>/<container bits>. Strings (string, ustring, symbol) cannot be passed in a\n"
        "register.",
        fix="use one of the integer types",
    ),
    CodeInfo(
        PROBE_ARG_SYMBOL,
        "a probe argument's @SYMBOL cannot be resolved",
        "@SYMBOL reads memory at a symbol's address: for uprobes the symbol must be in the target's\n"
        "symbol table (its run-time address is found from the probed instruction's, so PIE programs\n"
        "and shared libraries work, but not in return probes); for kprobes it comes from /proc/kallsyms.",
        fix="check the symbol name with `nm` on the target",
    ),
    CodeInfo(
        PROLOGUE_REJECTED,
        "the verifier rejected a program together with its argument prologue",
        "A probe program with fetched arguments is loaded as prologue + program. The program reads an\n"
        "argument register (R3-R5) the probe definition does not fetch, or the prologue itself was\n"
        "refused (the full verifier log is kept with the error).",
        fix="make the program take as many arguments as the probe definition fetches",
    ),
    CodeInfo(
        NET_NO_DEVICE,
        "an xdp or tc program names no network interface",
        "XDP and tc programs are attached to a network interface. The section names it with a\n"
        "dev=IFACE setting (SEC(\"dev=eth0;xdp\"), SEC(\"dev=eth0;tc/egress\")); programs whose section\n"
        "names none use the interface given with `evspec record --dev IFACE`.",
        fix="add --dev IFACE to the command line, or dev=IFACE; in front of the section name",
    ),
    CodeInfo(
        NET_UNKNOWN_DEVICE,
        "the network interface an xdp or tc program names does not exist",
        "The interface named by dev= or --dev is not present in the network namespace evspec runs\n"
        "in. The message lists the interfaces that are.",
        fix="name an existing interface (see `ip link`), or run evspec in the interface's namespace",
    ),
    CodeInfo(
        NET_XDP_BUSY,
        "another XDP program is attached to the interface",
        "An interface runs one XDP program per mode. evspec does not replace a program it did not\n"
        "attach unless the section says force=yes; with force=yes the other program is detached for\n"
        "the recording and NOT put back afterwards.",
        fix="detach the other program (`ip link set dev IFACE xdp off`), or add force=yes; to the section",
    ),
    CodeInfo(
        NET_XDP_MODE,
        "the interface cannot run the XDP program in the mode asked for",
        "mode=drv needs a driver with native XDP support; a program already attached in the other\n"
        "mode (generic vs driver) also blocks the attachment.",
        fix="use mode=skb (generic XDP works on every interface), or leave mode= out",
    ),
    CodeInfo(
        NET_HOOK_TWICE,
        "two programs of the recording attach to the same network hook",
        "An interface runs one XDP program per mode, so two xdp programs of the recording cannot\n"
        "share an interface.",
        fix="attach the programs to different interfaces, or merge them into one program",
    ),
    CodeInfo(
        NET_ATTACH_FAILED,
        "the kernel refused to attach an xdp or tc program",
        "A netlink request (setting an interface's XDP program, creating the clsact qdisc, adding a\n"
        "bpf filter) failed; the message names the request and the kernel's error. Attaching needs\n"
        "CAP_NET_ADMIN, tc needs the clsact qdisc and the bpf classifier in the kernel\n"
        "(CONFIG_NET_SCH_INGRESS, CONFIG_NET_CLS_BPF).",
        fix="run as root on a kernel with the features named in the message",
    ),
    CodeInfo(
        NET_DETACH_FAILED,
        "an xdp or tc attachment could not be removed",
        "At the end of a recording evspec removes the XDP programs, bpf filters and clsact qdiscs\n"
        "it added (and, at the start, those a killed evspec left behind). The message names what is\n"
        "still attached and why it could not be removed.",
        fix="remove it by hand: `ip link set dev IFACE xdp off`, `tc filter del dev IFACE ingress`,\n"
        "`tc qdisc del dev IFACE clsact`",
    ),
    CodeInfo(
        PERF_DATA_CORRUPT,
        "a perf.data file is malformed",
        "The file does not start with perf's PERFILE2 header, or a section, attribute or record\n"
        "points past the end of the file or is shorter than its own header says. A file whose writer\n"
        "was killed is still read up to its last complete record; this error means worse damage.",
    ),
    CodeInfo(
        PERF_DATA_UNSUPPORTED,
        "a perf.data file uses a layout evspec does not read",
        "The file is valid but written in a way evspec's reader does not handle: byte-swapped (from a\n"
        "machine of the other endianness), the old PERFFILE magic, a pipe-mode stream, or samples\n"
        "whose events cannot be told apart (several events and no PERF_SAMPLE_IDENTIFIER or\n"
        "PERF_SAMPLE_ID at one position).",
        fix="convert it with perf on the machine that wrote it: `perf inject -i IN -o OUT`",
    ),
    CodeInfo(
        PERF_DATA_WRITE,
        "the capture file cannot be written",
        "evspec record -o FILE could not create or write the file (a missing directory, no\n"
        "permission, a full disk); the message names the file and the error.",
        fix="choose another path with -o, or free space on its file system",
    ),
    CodeInfo(
        BTF_FIXUP,
        "the object's BTF cannot be prepared for the kernel",
        "Before loading an object's BTF evspec completes what clang leaves to the loader: the sizes\n"
        "of the DATASECs (.maps, .data, .bss, .rodata, license) from the ELF sections and the offsets\n"
        "of their variables from the symbols. A variable without a symbol, a DATASEC naming a section\n"
        "the object lacks (externs: .kconfig, .ksyms) or a variable past its section's end stops that.\n"
        "The object is then loaded without BTF: maps have no key/value types, programs no func/line\n"
        "info (`evspec record -v` says why).",
        fix="rebuild the object with clang -g -O2 -target bpf and without extern (__kconfig, __ksym)\n"
        "variables",
    ),
    CodeInfo(
        TRACEPOINT_FORMAT,
        "a tracepoint's format file cannot be read or parsed",
        "evspec decodes the raw data of tracepoint samples with the field list of\n"
        "/sys/kernel/tracing/events/SYS/EVENT/format. The file is missing, unreadable, or has a field\n"
        "line that does not match `field:TYPE NAME; offset:N; size:N; signed:N;`. Samples of that\n"
        "event are printed as a hexdump instead.",
        fix="mount tracefs (mount -t tracefs nodev /sys/kernel/tracing) and run evspec as root",
    ),
    CodeInfo(
        PAST_THE_RECORD,
        "a tracepoint program reads past the tracepoint's record",
        "The verifier lets a tracepoint program read its context at any constant offset and keeps the\n"
        "highest one; PERF_EVENT_IOC_SET_BPF then compares it with the size of the tracepoint's\n"
        "record and refuses the program with EACCES when it reads further (the record's fields are\n"
        "in events/SYS/EVENT/format). It is a finding about the program, reported with exit status 1.",
        fix="read only the fields of the tracepoint's format, at their offsets (or use a\n"
            "raw_tp/ or tp_btf/ program, whose arguments the verifier checks by type)",
    ),
    CodeInfo(
        UNSAMPLED_EVENT,
        "an event evspec record can neither print nor give to a program",
        "evspec record samples tracepoint events (every hit, as perf record does) and bpf-output\n"
        "events, and prints their samples as perf script does. The samples of hardware,\n"
        "software, cache, raw, breakpoint and PMU events are instruction pointers, which evspec does\n"
        "not resolve to symbols; such an event is recorded only when a term of a BPF object gives it\n"
        "to a program (map:NAME.event=EVENT, prog:NAME.event=EVENT). Any other is refused before\n"
        "anything is loaded, rather than counted and never shown.",
        fix="record it with perf record, or give it to a BPF program with a map: or prog: term",
    ),
    CodeInfo(
        PROBE_TARGET,
        "the binary a uprobe goes on cannot be read",
        "A uprobe names an executable or shared library (perf's exec=PATH, libbpf's uprobe/PATH:FUNC);\n"
        "evspec reads its symbol table and program headers to find the probed function's file offset.\n"
        "The file is missing, unreadable, not ELF, or not an executable or shared library.",
        fix="give the full path of the binary (`command -v PROG`, `ldconfig -p | grep LIB`)",
    ),
    CodeInfo(
        PROBE_FUNCTION,
        "the probed function is not in the binary (or the kernel)",
        "No function symbol of that name is in the binary's .symtab (or .dynsym, for stripped files),\n"
        "or no kernel text symbol in /proc/kallsyms matches a kprobe glob. The message lists close\n"
        "matches.",
        fix="check the name with `nm -D --defined-only BINARY` (or `nm BINARY`)",
    ),
    CodeInfo(
        PROBE_ADDRESS,
        "a probe address or offset lies outside the function or the binary",
        "FUNC+OFF must stay inside the function (its symbol's size), and a bare address must lie in a\n"
        "PT_LOAD segment of the binary (it is a virtual address, as `nm` and `objdump -d` print it).",
        fix="use an offset smaller than the function's size, or an address `objdump -d` shows",
    ),
    CodeInfo(
        NO_KPROBES,
        "this kernel cannot create kprobes",
        "kprobes are created through the kprobe PMU (/sys/bus/event_source/devices/kprobe, Linux 4.17+)\n"
        "or through tracefs kprobe_events; a kernel built without CONFIG_KPROBE_EVENTS has neither.\n"
        "perf says \"You need to check probing points in BPF file\" here.",
        fix="use a tracepoint (SYS:EVENT) instead, or a kernel with CONFIG_KPROBE_EVENTS=y",
    ),
    CodeInfo(
        NO_UPROBES,
        "this kernel cannot create uprobes",
        "uprobes are created through the uprobe PMU (/sys/bus/event_source/devices/uprobe) or\n"
        "through tracefs uprobe_events; a kernel built without CONFIG_UPROBE_EVENTS has neither.",
        fix="use a kernel with CONFIG_UPROBE_EVENTS=y",
    ),
    CodeInfo(
        PROBE_EXISTS,
        "a probe event of that name is created twice",
        "Two programs (or two objects) of one recording define the same perf-style probe event\n"
        "(EVENT=...); perf stops with \"Probe point exist. Try 'perf probe -d \"*\"' and set\n"
        "'force=yes'\". With force=yes the second one gets the next free name, EVENT_1, as in perf.",
        fix="add force=yes; to the section, or give the events different names",
    ),
    CodeInfo(
        PROBE_CREATE,
        "the kernel refused to create a probe event",
        "Writing the probe definition to tracefs uprobe_events/kprobe_events failed; the message has\n"
        "the line written and the errno (ENOENT: the kernel function or file does not exist, EINVAL:\n"
        "a definition it does not accept). The kernel's own reason is in tracefs error_log.",
        fix="read /sys/kernel/tracing/error_log",
    ),
    CodeInfo(
        PROBE_REMOVE,
        "a probe event evspec created could not be removed",
        "At the end of a recording evspec removes the tracefs entries it created (-:GROUP/EVENT). The\n"
        "kernel refused (EBUSY: another program still has the event open). Entries of evspec runs\n"
        "that are gone are also removed at the start of the next run.",
        fix="remove it by hand as the message shows, once nothing uses it",
    ),
    CodeInfo(
        PROBE_SETTING,
        "a probe setting or probe point evspec cannot honour",
        "inlines=yes (probing inlined copies), FUNC:LINE, SRC:LINE and FUNC@SRC need the target's\n"
        "DWARF inline and line information, which evspec does not read; module= does not apply to a\n"
        "uprobe; settings do not apply to libbpf-style sections. evspec probes the out-of-line\n"
        "function named in the symbol table (what inlines=no asks for).",
        fix="probe FUNC, FUNC+OFF, FUNC%return or an address; drop the setting",
    ),
    CodeInfo(
        PROBE_TOO_MANY,
        "a probe glob matches too many functions",
        "perf-probe makes at most 128 probe points from one definition (its default --max-probes);\n"
        "evspec keeps that limit so that a glob such as '*' does not create thousands of probes.",
        fix="narrow the glob",
    ),
    CodeInfo(
        PROBE_NAME_TOO_LONG,
        "a probe event name is longer than tracefs takes",
        "Probe event names are at most 63 characters (perf-probe's 64-byte buffer with its NUL;\n"
        "perf 6.1 fails with 'Argument list too long'). The section's own event name is checked\n"
        "when the section is read (EB101); this code is for the names made from it: the second and\n"
        "further matches of a glob are called EVENT_1, EVENT_2 ..., and force=yes names a repeated\n"
        "event the same way, which can push a name that fits past the limit.",
        fix="shorten the event name in the section (EVENT=FUNC) by the length of the suffix",
    ),
)
