"""Codes ``EB0xx``: BPF objects and sources that cannot be read or compiled, or whose CO-RE
relocations and externs do not resolve."""

from __future__ import annotations

from evspec.codes import CodeInfo

OBJECT_UNREADABLE = "EB001"
NOT_ELF = "EB002"
NOT_BPF = "EB003"
BYTE_ORDER = "EB004"
CORRUPT_ELF = "EB005"
BAD_PROGRAM = "EB006"
BAD_RELOCATION = "EB007"
BAD_MAP = "EB008"
CORRUPT_BTF = "EB009"
CORRUPT_BTF_EXT = "EB010"
BAD_LICENSE_OR_VERSION = "EB011"
COMPILE_FAILED = "EB012"
NO_CLANG = "EB013"
UNSUPPORTED = "EB014"
CORE_RELOCATION = "EB015"
EXTERN_INVALID = "EB016"
EXTERN_UNRESOLVED = "EB017"
EXTERN_TYPE = "EB018"
KCONFIG_UNREADABLE = "EB019"
EXTERN_SOURCES_CORRUPT = "EB020"
MAP_SETTER_RANGE = "EB031"
MAP_SETTER_REFUSED = "EB032"
MAP_UNSIZED = "EB033"
MAP_PIN_PATH = "EB034"
PROG_AUTOLOAD = "EB035"
NO_ALTERNATIVE = "EB036"
INPUT_TOO_BIG = "EB170"
LIBBPF_DIFFERENCE = "WB160"
CACHE_REFUSED = "WB001"
CORE_UNRESOLVED = "WB002"
EXTERN_WEAK_MISSING = "WB003"
EXTERN_UNCHECKED = "WB004"
EXTERN_VALUE_CUT = "WB005"
MAP_SETTER_DROPS_BTF = "WB031"

CODES: tuple[CodeInfo, ...] = (
    CodeInfo(
        OBJECT_UNREADABLE,
        "the BPF object or source cannot be opened",
        "The file named as a BPF object (.o) or source (.c) does not exist, is a directory, or "
        "cannot be read by this user.",
        "./missing.o",
        "Check the path; relative paths are taken from the current directory.",
    ),
    CodeInfo(
        NOT_ELF,
        "not an ELF file",
        "A BPF object must be an ELF relocatable file as clang writes it with `-target bpf -c`. "
        "The file is empty or does not start with the ELF magic number (a text file, a script, a "
        "truncated download).",
        "./notelf.o",
        "Build the object with `clang -target bpf -O2 -g -c prog.c -o prog.o`, or name the .c "
        "source and let evspec compile it.",
    ),
    CodeInfo(
        NOT_BPF,
        "an ELF file, but not a BPF object",
        "The file is ELF, but built for another machine (x86-64, AArch64 ...), or it is 32-bit, or "
        "it is not a relocatable object (an executable or a shared library). BPF objects have "
        "e_machine EM_BPF (247) and type ET_REL.",
        "./x86.o",
        "Compile with `-target bpf`; a host compiler (`cc -c`) makes host objects.",
    ),
    CodeInfo(
        BYTE_ORDER,
        "the BPF object has the other byte order",
        "The object was built for a big-endian BPF target (`-target bpfeb`) and this host is "
        "little-endian, or the reverse. The kernel only loads programs in its own byte order.",
        "./prog_be.o",
        "Use `-target bpf` (the host's byte order), or `bpfel`/`bpfeb` explicitly to match the host.",
    ),
    CodeInfo(
        CORRUPT_ELF,
        "truncated or corrupt ELF file",
        "The ELF headers describe data that is not in the file: the section header table or a "
        "section lies past its end, entries have impossible sizes, or names and links point "
        "nowhere. The file was probably cut short or damaged.",
        "",
        "Rebuild the object.",
    ),
    CodeInfo(
        BAD_PROGRAM,
        "bad program layout",
        "A function symbol of a program section lies outside its section, is not a multiple of "
        "the 8-byte instruction size, or overlaps the section's end.",
    ),
    CodeInfo(
        BAD_RELOCATION,
        "bad relocation",
        "A relocation entry of a program points outside the program, at an instruction that "
        "cannot be relocated, at a symbol that does not exist, or at something that is neither a "
        "map, a global data section nor a function.",
        "",
        "Rebuild the object; if it comes from an unusual tool chain, check that map references "
        "use `ld_imm64` and bpf-to-bpf calls target functions in executable sections.",
    ),
    CodeInfo(
        BAD_MAP,
        "bad map definition",
        "A map in SEC(\"maps\") (struct bpf_map_def) or SEC(\".maps\") (BTF-defined) cannot be "
        "understood: a record shorter than type, key_size, value_size and max_entries, a BTF map "
        "without BTF, a field declared with the wrong shape or an unknown field, conflicting "
        "sizes, or two maps with the same name.",
        "",
        "Declare BTF maps with libbpf's __uint()/__type() macros and compile with -g.",
    ),
    CodeInfo(
        CORRUPT_BTF,
        "corrupt BTF",
        "The .BTF section is damaged: bad magic or version, areas past its end, unknown type "
        "kinds, type ids out of range, or loops in type chains.",
    ),
    CodeInfo(
        CORRUPT_BTF_EXT,
        "corrupt BTF.ext",
        "The .BTF.ext section (function and line information) is damaged or refers to strings "
        "and types that are not in .BTF.",
    ),
    CodeInfo(
        BAD_LICENSE_OR_VERSION,
        "bad license or version section",
        "The `license` section must hold a NUL-terminated string and the `version` section one "
        "32-bit number (LINUX_VERSION_CODE).",
    ),
    CodeInfo(
        COMPILE_FAILED,
        "compiling the BPF source failed",
        "clang rejected the .c source; its messages are attached. evspec compiles the way perf "
        "did: clang -target bpf -O2 -g -D__KERNEL__ -D__NR_CPUS__=N -DLINUX_VERSION_CODE=V, with "
        "the host's multiarch include directory and evspec's own <uapi/linux/bpf.h> (which adds "
        "the kernel's u8..u64 types) on the include path.",
        "./broken.c",
    ),
    CodeInfo(
        NO_CLANG,
        "clang not found",
        "Compiling a .c source needs clang with the BPF target. evspec uses the path given to it, "
        "else $EVSPEC_CLANG, else `clang` on PATH.",
        "",
        "Install clang (Debian/Ubuntu: apt-get install clang) or set EVSPEC_CLANG.",
    ),
    CodeInfo(
        UNSUPPORTED,
        "unsupported BPF object feature",
        "The object uses something evspec does not load: externs resolved in a kernel module's "
        "BTF, RELA relocations, or a relocation kind that only libbpf's CO-RE machinery handles.",
    ),
    CodeInfo(
        CORE_RELOCATION,
        "CO-RE relocation cannot be applied",
        "The object's CO-RE relocations (.BTF.ext core_relo records, written by clang for "
        "preserve_access_index types, BPF_CORE_READ and bpf_core_* macros) are resolved against a "
        "target BTF: the running kernel's /sys/kernel/btf/vmlinux or the one given. This one cannot "
        "be: there is no target BTF, a record is malformed (access string out of range, unknown "
        "kind), several target types match with different answers, or the instruction is not the "
        "one the relocation expects. A field that is simply missing in the target is no error: its "
        "instruction is poisoned, and the verifier refuses it only if it is reached.",
        "",
        "Check the target BTF (`bpftool btf dump file /sys/kernel/btf/vmlinux`), and rebuild the "
        "object from a vmlinux.h or local type definitions that match it.",
    ),
    CodeInfo(
        EXTERN_INVALID,
        "extern declared in a way libbpf does not accept",
        "An undefined symbol of the object is an extern, which needs an extern VAR or FUNC of its "
        "name in the object's BTF, listed in the .kconfig DATASEC (__kconfig variables of type "
        "bool, enum libbpf_tristate, char, a 2-, 4- or 8-byte integer or a char array) or the "
        ".ksyms DATASEC (__ksym variables and kfuncs). This one is not.",
        "",
        "Declare it with __kconfig or __ksym from bpf/bpf_helpers.h, with one of those types, and "
        "compile with -g.",
    ),
    CodeInfo(
        EXTERN_UNRESOLVED,
        "extern not found on this system",
        "A strong (not __weak) extern has no value here: a CONFIG_ option the kernel's Kconfig "
        "does not set, a __ksym the kernel's BTF or /proc/kallsyms does not have, a kfunc the "
        "kernel's BTF does not have, or a __kconfig name that is neither CONFIG_* nor one of "
        "libbpf's LINUX_* values. Weak externs that are missing are 0, as libbpf makes them.",
        "",
        "Mark the extern __weak and test it before use, or load on a kernel that has it.",
    ),
    CodeInfo(
        EXTERN_TYPE,
        "extern's type does not fit its value",
        "The value found for an extern does not fit the type the object declares it with: a "
        "Kconfig value y/n/m, a string or a number into a type that cannot hold it (m into a "
        "bool, a number too big for its integer), or a __ksym or kfunc whose type or prototype "
        "differs from the kernel's BTF.",
        "",
        "Declare the extern with a type that holds the value (enum libbpf_tristate for y/m/n, "
        "a wider integer), or as the kernel's BTF declares it.",
    ),
    CodeInfo(
        KCONFIG_UNREADABLE,
        "the kernel's Kconfig cannot be read",
        "The object has CONFIG_* __kconfig externs, whose values come from the running kernel's "
        "configuration: /boot/config-$(uname -r), else /proc/config.gz (CONFIG_IKCONFIG_PROC). "
        "Neither can be read.",
        "",
        "Install the kernel's config file in /boot, or load the configs module (modprobe configs).",
    ),
    CodeInfo(
        EXTERN_SOURCES_CORRUPT,
        "the system snapshot's extern sources cannot be used",
        "`evspec check --system SNAPSHOT` resolves the object's __kconfig and __ksym externs against "
        "the snapshot's `extern_sources` block (uname, the Kconfig values, the names of "
        "/proc/kallsyms; written by `evspec system snapshot --btf`). The block is damaged: a field "
        "of the wrong type, base64 or zlib data that does not decode, a line that is not what the "
        "field holds. The message names the field.",
        "",
        "Write the snapshot again on the machine it describes: evspec system snapshot --btf -o FILE.",
    ),
    CodeInfo(
        INPUT_TOO_BIG,
        "the BPF object or source is too large",
        "evspec reads a BPF object or source of at most 256 MiB (MAX_INPUT_BYTES in "
        "loader/object/input_file.py) and refuses a larger file before reading it: objects clang "
        "builds are a few megabytes, so a larger file is most likely not the one meant (an image, "
        "a core dump, a file still growing).",
        "./core.o",
        "Name the BPF object or source itself.",
    ),
    CodeInfo(
        LIBBPF_DIFFERENCE,
        "evspec loads this object differently from libbpf (a note)",
        "A note, not a failing finding: the object uses something evspec handles on purpose "
        "differently from libbpf 1.x (COMPAT 16), so a libbpf-based loader (bpftool, a skeleton, "
        "perf 6.1 and later) would not do what evspec does. Legacy SEC(\"maps\") map definitions "
        "(struct bpf_map_def, perf's 2016 examples): libbpf 1.0 and later refuse the whole object "
        "(\"legacy map definitions in 'maps' section are not supported by libbpf v1.0+\"), evspec "
        "reads them. SEC(\"?...\") programs (autoload off): libbpf loads them only when asked to, "
        "evspec loads them so that the verifier checks them, and attaches nothing.",
        "./legacy_maps.o",
        "To load the object with libbpf too, declare the maps in SEC(\".maps\") with __uint/__type "
        "(BTF-defined maps).",
    ),
    CodeInfo(
        CACHE_REFUSED,
        "compile cache not used",
        "The cache directory for compiled sources ($XDG_CACHE_HOME/evspec/bpf or "
        "~/.cache/evspec/bpf) is not a directory owned by the current user, or is writable by "
        "group or others; a planted object there could be loaded into the kernel, so evspec "
        "compiles into a private temporary directory instead.",
        "",
        "chmod 700 the cache directory, or remove it and let evspec recreate it.",
    ),
    CodeInfo(
        CORE_UNRESOLVED,
        "CO-RE relocation not resolved",
        "A CO-RE relocation of the object names a field or enumerator that the target kernel's "
        "BTF does not have: its instruction is poisoned (libbpf's `call 195896080`), and the "
        "verifier refuses the program if the instruction is reached (a read guarded by "
        "bpf_core_field_exists is not). Or the relocations could not be checked at all, the "
        "system having no BTF to check them against.",
        "",
        "Guard the access with bpf_core_field_exists(), or use a flavour (struct x___v2) that "
        "matches this kernel.",
    ),
    CodeInfo(
        EXTERN_WEAK_MISSING,
        "weak extern not found on the system",
        "A __weak extern has no value on the system checked against: a CONFIG_ option its Kconfig "
        "does not set, a __ksym its BTF or /proc/kallsyms lacks, a kfunc its BTF lacks (or has with "
        "another prototype). libbpf loads the object anyway: a weak __kconfig or __ksym is 0 (its "
        "address NULL), and each call of a weak kfunc is poisoned (the helper call 2002000000 + the "
        "extern's index in libbpf's extern list), which the verifier refuses only if the program "
        "can reach it.",
        "",
        "Test the extern before use: bpf_ksym_exists(kfunc) around its calls, `if (&sym)` for a "
        "ksym, and treat a kconfig value of 0 as not set.",
    ),
    CodeInfo(
        EXTERN_UNCHECKED,
        "externs not checked",
        "The object's __kconfig or __ksym externs (or kfuncs) could not be resolved against the "
        "system checked against, because the description of the system does not hold what they "
        "need: a system snapshot written without --btf or before it saved extern sources, one "
        "whose machine's Kconfig or /proc/kallsyms could not be read when it was written, a kfunc "
        "or ksym that is not in vmlinux's BTF (a snapshot records no module BTF), or kallsyms "
        "addresses that were hidden, so that whether a name listed twice is ambiguous cannot be "
        "told.",
        "",
        "Write the snapshot again with `evspec system snapshot --btf` (as root, so that kallsyms "
        "addresses can be compared), or check on the machine itself.",
    ),
    CodeInfo(
        EXTERN_VALUE_CUT,
        "extern value changed to fit",
        "The value of a __kconfig extern was changed to fit its type, as libbpf changes it (and "
        "warns): a Kconfig string longer than its char array is cut to the array's size, with its "
        "NUL.",
        "",
        "Declare the char array large enough for the value and its NUL.",
    ),
    CodeInfo(
        MAP_SETTER_RANGE,
        "map setter value out of range",
        "A map setter term (map:NAME.max_entries=, map_flags=, key_size=, value_size=, numa_node=, "
        "map_type=) gives a value the kernel's BPF_MAP_CREATE refuses for that map: a key or value "
        "size the map type does not take (4-byte keys of arrays, 1...512-byte hash keys, 4-byte "
        "values of perf event and program arrays, whole 8-byte frames in a stack map), 0 entries, "
        "more than 32 bits, map flags the kernel does not know, a NUMA node no kernel has, or a "
        "map type name libbpf does not know.",
        "./prog.o/map:counts.key_size=0/",
        "Give a value in the range the help line names.",
    ),
    CodeInfo(
        MAP_SETTER_REFUSED,
        "map cannot take a setter",
        "libbpf lets user space change a map declared in SEC(\".maps\") before it is created; "
        "the maps of data sections (.data, .rodata, .bss, .kconfig) have the size of their "
        "section, and a map-in-map and its inner map template are created together: setters on "
        "them are refused. A setter takes no index list.",
        "./prog.o/map:.rodata.max_entries=2/",
        "Set the section's variables with var:NAME=VALUE; declare a map-in-map's sizes in the object.",
    ),
    CodeInfo(
        MAP_UNSIZED,
        "map cannot be created as the object has it",
        "A map of the object has max_entries 0 (and is not a perf event array, which libbpf sizes "
        "to the CPUs, nor a storage map), or is a stack map of 0-byte values: the tool that ships "
        "the object sizes it from user space before loading (libbpf-tools' cpudist sizes 'start' "
        "to pid_max). The kernel refuses to create it as it is, so record refuses the object "
        "before anything is loaded.",
        "./cpudist.bpf.o",
        "Add the term the help line names, e.g. map:start.max_entries=4194304, "
        "map:stackmap.value_size=1016.",
    ),
    CodeInfo(
        MAP_PIN_PATH,
        "map pinning path not on a BPF filesystem",
        "map:NAME.pin=PATH pins the map at PATH (libbpf's bpf_map__set_pin_path); the kernel pins "
        "only on a mounted BPF filesystem, so PATH must be absolute and its folder must exist on "
        "one.",
        "./prog.o/map:counts.pin='/tmp/counts'/",
        "Pin under /sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf if it is not mounted).",
    ),
    CodeInfo(
        PROG_AUTOLOAD,
        "bad prog:NAME.autoload= term",
        "prog:NAME.autoload=0|1 (libbpf's bpf_program__set_autoload) loads a program or leaves it "
        "out: a program left out is neither verified nor attached, and a SEC(\"?...\") program is "
        "loaded with autoload=1. The value is 0 or 1.",
        "./prog.o/prog:handler.autoload=2/",
        "Write prog:NAME.autoload=0 or prog:NAME.autoload=1.",
    ),
    CodeInfo(
        NO_ALTERNATIVE,
        "no alternative of a hook can attach here",
        "The object holds programs that hook the same kernel function or event by different "
        "mechanisms (fentry/kprobe, fexit/kretprobe, tp_btf/raw_tp/tracepoint); record loads the "
        "first this kernel can attach, in libbpf-tools' order. None of them can attach here: the "
        "message says why for each (no BPF trampolines, no kprobes, no such tracepoint).",
        "",
        "Run on a kernel with the mechanism, or leave the programs out with prog:NAME.autoload=0.",
    ),
    CodeInfo(
        MAP_SETTER_DROPS_BTF,
        "map created without its BTF types",
        "map:NAME.key_size= or value_size= gives the map a size other than its BTF key or value "
        "type's: the kernel refuses the pair, so the map is created without its BTF key/value "
        "types, as libbpf does (bpftool then shows raw bytes).",
        "",
        "Declare the key or value type of the size wanted in the object.",
    ),
)
