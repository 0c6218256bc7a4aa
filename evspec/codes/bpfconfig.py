"""Codes ``EB1xx``/``WB1xx``: program section names, ``map:`` object terms, and the full check of
a BPF event against its object (sections, tracepoints, probes)."""

from __future__ import annotations

from evspec.codes import CodeInfo

# section names (loader/sections/names.py; spans into the section string)
SECTION_NOT_TP_OR_PROBE = "EB100"
BAD_PROBE_DEFINITION = "EB101"
BAD_PROBE_GROUP = "EB102"
NO_PROBE_EVENT = "EB103"
UNKNOWN_SETTING = "EB104"
BAD_SETTING_VALUE = "EB105"
BAD_TRACEPOINT_SECTION = "EB106"
BAD_LIBBPF_SECTION = "EB107"
SECTION_NOT_RUNNABLE = "EB108"
KEYLESS_SETTING = "WB109"
SETTING_NO_EFFECT = "WB110"

# map terms (loader/lint/terms/maps.py)
EMPTY_MAP_NAME = "EB119"
NOT_A_MAP_TERM = "EB120"
EMPTY_INDEX_LIST = "EB121"
REVERSED_RANGE = "EB122"
NO_SUCH_MAP = "EB123"
INDEX_TOO_LARGE = "EB124"
BAD_MAP_OPTION = "EB125"
NO_VALUE = "EB126"
WRONG_VALUE_TYPE = "EB127"
NO_SUCH_EVENT = "EB128"
WRONG_MAP_TYPE = "EB129"
BAD_KEY_SIZE = "EB130"
BAD_VALUE_SIZE = "EB131"
VALUE_TOO_WIDE = "EB132"
VALUE_TRUNCATED = "WB132"
NO_SUCH_PROGRAM = "EB135"
NOT_A_PERF_EVENT_PROGRAM = "EB136"
EVENT_CANNOT_CARRY_PROGRAM = "EB137"
# var:NAME=VALUE terms (loader/lint/terms/variables.py)
NO_SUCH_VARIABLE = "EB138"
BAD_VARIABLE_VALUE = "EB139"
VARIABLE_NOT_SETTABLE = "EB150"
# map:NAME.type=TYPE terms (loader/lint/terms/maps.py; COMPAT 1.14)
TYPE_WITH_INDICES = "EB151"
NO_SUCH_TYPE = "EB152"
NO_BTF_FOR_TYPE = "EB153"
# the bpf-output events record creates for perf event arrays (loader/lint/terms/bpf_stdout.py)
OUTPUT_EVENT_NAME_TAKEN = "EB159"
OUTPUT_EVENT_CREATED = "WB164"
# map:NAME.hist|unit|step|column terms: how record prints a map or global (loader/output/aggregate)
BAD_PRINT_TERM = "EB160"
INHERIT_EVENT_IN_MAP = "WB133"
EVENT_TYPE_NOT_STORABLE = "WB134"

BPF_MAP_HINT = (
    "Hint:\tValid config terms:\n"
    "     \tmap:[<arraymap>].value<indices>=[value]\n"
    "     \tmap:[<eventmap>].event<indices>=[event]\n"
    "\n"
    "     \twhere <indices> is something like [0,3...5] or [all]\n"
    "     \t(add -v to see detail)"
)
"""The help perf 6.1 prints under every BPF map-configuration error (attach it as ``perf_help``;
the loader's map-term checks do, and ``render.perf`` prints it)."""


# the object check (loader/lint/event.py; spans: the object's path)
OBJECT_NOT_FOUND = "EB140"
OBJECT_NOT_A_FILE = "EB141"
NO_PROGRAMS = "EB142"
UNKNOWN_TRACEPOINT = "EB143"
TRACEPOINT_UNCHECKED = "WB143"
NO_PROBE_SUPPORT = "EB144"
UPROBE_TARGET = "EB145"
UPROBE_FUNCTION = "EB146"
PROBE_EXISTS = "EB147"
BAD_EVENT_TERM = "EB148"

_SECTION_FORMS = (
    "perf's section names: optional settings `exec=PATH;`, `module=NAME;`, `inlines=yes|no;`, "
    "`force=yes|no;`, then `SYS:EVENT` (a tracepoint program) or `EVENT=PROBE [ARGS]` (a kprobe, "
    "or a uprobe with exec=)."
)

CODES: tuple[CodeInfo, ...] = (
    CodeInfo(
        TYPE_WITH_INDICES,
        "map:NAME.type takes no index list",
        "map:NAME.type=TYPE names the BTF type of every record of an output map; it selects no "
        "keys, so an index list (or [all]) has no meaning.",
        "./typed.bpf.o/map:events.type[0]=event/",
        "Drop the index list: map:events.type=event.",
    ),
    CodeInfo(
        NO_SUCH_TYPE,
        "map:NAME.type names no type of the object's BTF",
        "TYPE is looked up by name among the structs, unions and typedefs of the object's BTF "
        "(`event` finds `struct event`; the keyword cannot be written in a term value). The message "
        "lists the object's structs.",
        "./typed.bpf.o/map:events.type=evnt/",
        "Write the name of the struct the program writes into the map.",
    ),
    CodeInfo(
        NO_BTF_FOR_TYPE,
        "map:NAME.type on an object without BTF",
        "Records are decoded with the object's BTF (its .BTF section); an object compiled without "
        "-g has none, so no type can be found.",
        "./nobtf.bpf.o/map:events.type=event/",
        "Compile the object with clang -g.",
    ),
    CodeInfo(
        BAD_PRINT_TERM,
        "a term saying how a map prints is malformed",
        "map:NAME.hist=log2|linear|none, .unit=WORD, .step=N (a positive number) and "
        ".column[I]=HEADING|none say how record prints the counts a map or .bss global holds; "
        "hist, unit and step take no index list, column takes the index of one column.",
        "./runqlat.bpf.o/map:hists.hist=log10/",
        "Write one of the values the help line lists.",
    ),
    CodeInfo(
        SECTION_NOT_TP_OR_PROBE,
        "section name is neither SYS:EVENT nor EVENT=PROBE",
        "The main part of a program's section name (after the last ';') has no '=' and no ':', so "
        "perf can read it neither as a perf-probe definition nor as a tracepoint. perf 6.1: "
        "`Invalid config string`. " + _SECTION_FORMS,
        'SEC("exec=/usr/bin/target;myfn1")',
        'Name the probe event: SEC("exec=/usr/bin/target;probe1=myfn1"), or use SEC("SYS:EVENT").',
    ),
    CodeInfo(
        BAD_PROBE_DEFINITION,
        "malformed perf-probe definition in a section name",
        "The EVENT=PROBE part does not follow the perf-probe syntax `[GROUP:]EVENT=FUNC[@SRC]"
        "[+OFF|%return|:LINE] [ARG...]` (ARG: `[NAME=]VAR|$retval|$params|$vars|$stackN|%REG|@SYM|"
        "+OFF(ARG)[:TYPE]`), the group or event name is not a C identifier, or a return probe "
        "fetches a local variable. perf 6.1: `Invalid config string`.",
        'SEC("probe-1=myfn1")',
        "Use a C identifier as the event name and the perf-probe point syntax.",
    ),
    CodeInfo(
        BAD_PROBE_GROUP,
        "probe group is not perf_bpf_probe",
        "perf creates the probes of BPF programs in the group `perf_bpf_probe`; a section that names "
        "another group (`GROUP:EVENT=...`) is refused. perf 6.1: `Invalid group name`.",
        'SEC("mygroup:probe8=myfn1")',
        "Leave the group out: SEC(\"probe8=myfn1\").",
    ),
    CodeInfo(
        NO_PROBE_EVENT,
        "probe definition without an event name",
        "A perf-probe definition in a section name needs the event name before '=' "
        "(`EVENT=FUNC`): the text before '=' names the tracefs event perf creates. perf 6.1: "
        "`No event name found in config string`.",
        'SEC("myfn1 x=a")',
        'Write SEC("probe=myfn1 x=a").',
    ),
    CodeInfo(
        UNKNOWN_SETTING,
        "unknown program setting in a section name",
        "perf splits a section name at every ';' and takes every piece but the last as a KEY=VALUE "
        "setting; the keys are exec, module, inlines and force. A perf-probe lazy pattern "
        "(`FUNC;PATTERN`) therefore cannot be written in a section name. perf 6.1: `Invalid program "
        "config term in config string (add -v to see detail)`.",
        'SEC("foo=bar;func=do_sys_openat2")',
        "Remove the setting, or use exec=<full path of file>, module=<module name>, "
        "inlines=[yes|no], force=[yes|no].",
    ),
    CodeInfo(
        BAD_SETTING_VALUE,
        "bad value for a program setting",
        "inlines= and force= take a boolean as perf's strtobool reads it (y, yes, Y, 1, n, no, N, 0, "
        "on, off); exec= and module= need a value. perf 6.1 prints `Invalid argument` for a bad "
        "boolean.",
        'SEC("inlines=maybe;probe=myfn1")',
        "Write inlines=yes or inlines=no.",
    ),
    CodeInfo(
        BAD_TRACEPOINT_SECTION,
        "malformed tracepoint section name",
        "A section main part without '=' but with ':' is a tracepoint `SYS:EVENT` (`!SYS:EVENT` to "
        "load the program without an event); the system and event names may hold letters, digits, "
        "'_', '-', '.', and glob characters.",
        'SEC("raw syscalls:sys_enter")',
        "Write the tracepoint as it appears in tracefs events/SYS/EVENT.",
    ),
    CodeInfo(
        BAD_LIBBPF_SECTION,
        "malformed libbpf-style section name",
        "The section starts like a libbpf name (tracepoint/, tp/, raw_tp/, raw_tracepoint/, kprobe/, "
        "kretprobe/, uprobe/, uretprobe/) but the rest does not follow libbpf's form "
        "(tracepoint/SYS/EVENT, raw_tp/EVENT, kprobe/FUNC[+OFF], uprobe/PATH:FUNC[+OFF]).",
        'SEC("kprobe/")',
        "Complete the name, or use perf's form (SYS:EVENT, EVENT=PROBE).",
    ),
    CodeInfo(
        SECTION_NOT_RUNNABLE,
        "program of a kind evspec record cannot attach yet",
        "evspec reads libbpf's section names as part of its language, and `evspec check` accepts "
        "what `evspec record` runs: tracepoints (perf's SYS:EVENT, libbpf's tracepoint/ and tp/), "
        "raw tracepoints (raw_tp/), kprobes and uprobes (both styles), xdp and tc. Other kinds "
        "(socket, perf_event) "
        "are read and shown by `evspec inspect`, but record has no way to attach them yet. "
        "`check --perf VERSION` tells separately whether that perf can use the section at all.",
        'SEC("socket")',
        "Attach the program with its own loader for now.",
    ),
    CodeInfo(
        KEYLESS_SETTING,
        "setting without '=' is ignored",
        "A piece of a section name before the last ';' that has no '=' is not a setting; perf warns "
        "`WARNING: invalid config in BPF object: TEXT` / `Should be 'key=value'.` and ignores it.",
        'SEC("novalue;probe10=myfn2")',
        "Remove the piece or write it as KEY=VALUE.",
    ),
    CodeInfo(
        SETTING_NO_EFFECT,
        "program setting has no effect",
        "exec=, module=, inlines= and force= apply to kprobes and uprobes only; on a tracepoint or "
        "libbpf-style section they are ignored, and an exec=/module= followed by another one is "
        "replaced by it.",
        'SEC("exec=/bin/true;raw_syscalls:sys_enter")',
        "Remove the setting.",
    ),
    CodeInfo(
        EMPTY_MAP_NAME,
        "empty map name",
        "`map:.OPTION=VALUE` names no map; no map can have an empty name. perf: `Target map doesn't "
        "exist`.",
        "./maps.o/map:.value=1/",
        "Write the map's name after `map:`.",
    ),
    CodeInfo(
        NOT_A_MAP_TERM,
        "invalid BPF object term",
        "The terms of a BPF object that are no event keywords are object terms, and the only object "
        "terms are `map:NAME.OPTION[INDICES]=VALUE`; this one does not start with `map:` or has no "
        "`.OPTION`. perf: `Invalid object config option`.",
        "./maps.o/map:arr=1/",
        "Write map:NAME.value=NUMBER (ARRAY maps) or map:NAME.event=EVENT (PERF_EVENT_ARRAY maps).",
    ),
    CodeInfo(
        EMPTY_INDEX_LIST,
        "empty index list",
        "An index list selects map keys: numbers and inclusive ranges `a...b`, or `[all]`; `[]` "
        "selects nothing.",
        "./maps.o/map:arr.value[ ]=5/",
        "List indices ([0,3...5]), write [all], or drop the brackets (every key).",
    ),
    CodeInfo(
        REVERSED_RANGE,
        "reversed index range",
        "A range `a...b` needs a <= b (perf 6.1 aborts without a message).",
        "./maps.o/map:arr.value[ 5...3]=5/",
        "Write the lower index first: [3...5].",
    ),
    CodeInfo(
        NO_SUCH_MAP,
        "map not in the object",
        "The object has no map of that name (map names are the variable names in the .maps or maps "
        "section). perf: `Target map doesn't exist`.",
        "./maps.o/map:nosuch.value=1/",
        "Use one of the object's maps (`evspec inspect OBJECT` lists them).",
    ),
    CodeInfo(
        INDEX_TOO_LARGE,
        "index beyond the map's entries",
        "Every selected key must be below the map's max_entries. perf: `Index too large` (with its "
        "caret inside the map name; evspec marks the index).",
        "./maps.o/map:arr.value[ 8]=5/",
        "Use indices 0 ... max_entries-1.",
    ),
    CodeInfo(
        BAD_MAP_OPTION,
        "unknown map option",
        "The option after the map name is `value` (write a number into an ARRAY map) or `event` "
        "(put an event into a PERF_EVENT_ARRAY map). perf: `Invalid object map config option`.",
        "./maps.o/map:arr.val=1/",
        "Write .value or .event.",
    ),
    CodeInfo(
        NO_VALUE,
        "map term without a value",
        "A map term needs `=VALUE`. perf: `Config value not set (missing '=')`.",
        "./maps.o/map:arr.value/",
        "Add =NUMBER (value) or =EVENT (event).",
    ),
    CodeInfo(
        WRONG_VALUE_TYPE,
        "wrong value type for the map option",
        "map:NAME.value takes a number (decimal or 0x-hex); map:NAME.event takes the name of an "
        "earlier event. perf: `Incorrect value type for map`.",
        "./maps.o/map:channel.event=123/",
        "Give a number for .value and an event name for .event.",
    ),
    CodeInfo(
        NO_SUCH_PROGRAM,
        "prog:NAME names no program of the object",
        "A program term names a program (a function in a program section) of the BPF object.",
        "./sampler.bpf.o/prog:on_tik.event=cpu-clock/",
        "`evspec inspect OBJ.o` lists the programs; write the function's name.",
    ),
    CodeInfo(
        NO_SUCH_VARIABLE,
        "var:NAME names no global variable of the object",
        "A variable term names a global variable of the BPF object: one of its .rodata (const "
        "volatile), .data or .bss variables, found in the object's BTF. The message lists them.",
        "./vars.bpf.o/var:targ_pdi=42/",
        "`evspec inspect OBJ.o` lists the data sections; write the variable's name.",
    ),
    CodeInfo(
        BAD_VARIABLE_VALUE,
        "var:NAME=VALUE: the value does not fit the variable",
        "The value of a variable term is checked against the variable's BTF type: an integer within "
        "the range its size and signedness allow (a negative one quoted: var:delta='-5'), true or "
        "false for a bool, an enumerator's name for an enum, a quoted string shorter than a char "
        "array.",
        "./vars.bpf.o/var:delta=300/",
        "Give a value of the variable's type; the message says which values it takes.",
    ),
    CodeInfo(
        VARIABLE_NOT_SETTABLE,
        "var:NAME names a variable evspec cannot set",
        "Only integers, bools, enums and char arrays are set by a variable term; a struct, union, "
        "pointer, float or other array is refused by name rather than written as raw bytes.",
        "./vars.bpf.o/var:cfg=1/",
        "Split the struct into scalar globals, or set it in the program's source.",
    ),
    CodeInfo(
        NOT_A_PERF_EVENT_PROGRAM,
        "prog:NAME.event= names a program that is not a perf_event program",
        "Only a program in a SEC(\"perf_event\") section is put on an event by a program term; a "
        "tracepoint, probe or network program attaches where its section says.",
        "./maps.o/prog:on_enter.event=cpu-clock/",
        "Put the program in SEC(\"perf_event\"), or drop the term.",
    ),
    CodeInfo(
        EVENT_CANNOT_CARRY_PROGRAM,
        "the event of a program term cannot carry a perf_event program",
        "A perf_event program runs when a sampling event (hardware, software, raw, cache, a PMU "
        "event) overflows; tracepoints, breakpoints, BPF objects and tool events take other programs "
        "or none.",
        "-e sched:sched_switch -e ./sampler.bpf.o/prog:on_tick.event=sched:sched_switch/",
        "Name a sampling event defined earlier, for example -e cpu-clock/freq=99/.",
    ),
    CodeInfo(
        NO_SUCH_EVENT,
        "map:NAME.event= names no earlier event",
        "The event is looked up among the events defined before this term, by their name= or their "
        "text (evspec: also earlier events of the same string; perf: only earlier -e options). "
        "perf: `Event not found for map setting`.",
        "./maps.o/map:channel.event=evt/",
        "Define it first: -e bpf-output/no-inherit,name=evt/ -e ./maps.o/map:channel.event=evt/",
    ),
    CodeInfo(
        WRONG_MAP_TYPE,
        "this map type does not take this option",
        ".value needs a BPF_MAP_TYPE_ARRAY map, .event a BPF_MAP_TYPE_PERF_EVENT_ARRAY map and .type a "
        "BPF_MAP_TYPE_RINGBUF or PERF_EVENT_ARRAY map. "
        "perf: `Can't use this config term with this map type`.",
        "./maps.o/map:hmap.value=1/",
        "Use the option the map type takes, or another map.",
    ),
    CodeInfo(
        BAD_KEY_SIZE,
        "map keys smaller than 4 bytes",
        "perf writes map:NAME.value settings with 4-byte keys. perf: `Incorrect map key size`.",
        "",
        "Declare the map with int keys.",
    ),
    CodeInfo(
        BAD_VALUE_SIZE,
        "map value size is not 1, 2, 4 or 8 bytes",
        "map:NAME.value writes an integer, so the map's values must be 1, 2, 4 or 8 bytes wide. "
        "perf: `Incorrect map value size`.",
        "./maps.o/map:arr3.value=1/",
        "Declare the map's value as __u8, __u16, __u32 or __u64.",
    ),
    CodeInfo(
        VALUE_TOO_WIDE,
        "value does not fit the map's values",
        "The number is wider than the map's value size. perf 6.1 silently keeps the low bits "
        "(300 into a 1-byte map stores 44); evspec rejects it, as it rejects other numbers that do "
        "not fit (corpus Decision 6).",
        "./maps.o/map:arr8.value=300/",
        "Use a value below 2**(8*value_size), or a map with wider values.",
    ),
    CodeInfo(
        VALUE_TRUNCATED,
        "value truncated to the map's value size (perf dialect)",
        "In perf's dialect a value wider than the map's values is truncated; the warning says what "
        "perf stores.",
        "./maps.o/map:arr8.value=300/",
        "Use a value that fits.",
    ),
    CodeInfo(
        OUTPUT_EVENT_NAME_TAKEN,
        "the automatic output event's name is taken",
        "`evspec record` gives every perf event array that a program sends to (bpf_perf_event_output) "
        "and that no map:NAME.event= term fills a bpf-output event of its own, named after the map. "
        "Another event of the command already has that name, so map:NAME.event= terms and the "
        "printed records could not tell the two apart.",
        "cpu-clock/name=events/,./execsnoop.bpf.o",
        "Rename the other event (name=...), or give the map an event of your own: "
        "bpf-output/no-inherit,name=out/ and map:MAP.event=out.",
    ),
    CodeInfo(
        OUTPUT_EVENT_CREATED,
        "record creates a bpf-output event for a perf event array (a note)",
        "A note, not a failing finding: a program of the object sends records to this perf event "
        "array and no term gives it an event, so `evspec record` creates "
        "`bpf-output/no-inherit=1,name=MAP/` and stores it at every CPU's key, as perf does for "
        "`__bpf_stdout__`. The note says which programs send there and how the records are printed: "
        "as the struct the object says they are (the BTF value type of the map they are taken "
        "from), or as bytes, when map:MAP.type=TYPE would print them as fields.",
        "./execsnoop.bpf.o",
        "Nothing to fix; to choose the event yourself, add bpf-output/no-inherit,name=out/ before the "
        "object and map:MAP.event=out to its terms.",
    ),
    CodeInfo(
        INHERIT_EVENT_IN_MAP,
        "event put into a map inherits",
        "perf record refuses to put an inheriting event into a PERF_EVENT_ARRAY when it applies the "
        "map settings: `Doesn't support inherit event (Hint: use -i to turn off inherit)`.",
        "bpf-output/name=evt/,./maps.o/map:chan1.event=evt/",
        "Define the event with no-inherit, or record with -i.",
    ),
    CodeInfo(
        EVENT_TYPE_NOT_STORABLE,
        "event type cannot go into a map",
        "perf record puts only raw, hardware and bpf-output events into a PERF_EVENT_ARRAY: "
        "`Can only put raw, hardware and BPF output event into a BPF map`.",
        "cpu-clock/name=c,no-inherit/,./maps.o/map:chan1.event=c/",
        "Use a bpf-output event (bpf-output/no-inherit,name=evt/), a hardware or a raw event.",
    ),
    CodeInfo(
        OBJECT_NOT_FOUND,
        "BPF object or source not found",
        "The path of a BPF event does not exist (relative paths are taken from the working "
        "directory). evspec recognises BPF objects by their suffix, so this is reported on the path "
        "(perf 6.1 does not even see a BPF event then and reports a parser error).",
        "./nonexist.o",
        "Check the path and the working directory.",
    ),
    CodeInfo(
        OBJECT_NOT_A_FILE,
        "BPF object path is not a regular file",
        "The path names a directory or a special file (a FIFO, a device, a socket). evspec reads "
        "BPF objects and sources only from regular files: a FIFO would block the read and a device "
        "such as /dev/zero never ends.",
        "./sub.o",
        "Name the object file itself, or copy what the special file delivers into one.",
    ),
    CodeInfo(
        NO_PROGRAMS,
        "BPF object without programs",
        "The object has no program sections, so loading it adds no event. perf 6.1 prints only "
        "`WARNING: event parser found nothing`.",
        "./noprog.o",
        "Add a program, e.g. SEC(\"raw_syscalls:sys_enter\") int prog(void *ctx) { return 1; }.",
    ),
    CodeInfo(
        UNKNOWN_TRACEPOINT,
        "tracepoint section names no tracepoint of the system",
        "A program's section SYS:EVENT must name a tracepoint in tracefs events/SYS/EVENT of the "
        "system. perf 6.1: `Attach events in BPF object failed`, initial error `unknown tracepoint`.",
        "./badtp.o",
        "Use an existing tracepoint (`evspec list tracepoint`).",
    ),
    CodeInfo(
        TRACEPOINT_UNCHECKED,
        "tracepoint section not checked",
        "The system's tracefs cannot be read (not mounted, or not readable by this user), so whether "
        "a program's SYS:EVENT tracepoint exists is not known.",
        "./maps.o",
        "Mount tracefs (as root: mount -t tracefs nodev /sys/kernel/tracing) or check against a "
        "system snapshot.",
    ),
    CodeInfo(
        NO_PROBE_SUPPORT,
        "the system cannot create this kind of probe",
        "perf creates the kprobes and uprobes of BPF programs through tracefs kprobe_events / "
        "uprobe_events; the system has none (kernel without CONFIG_KPROBE_EVENTS / "
        "CONFIG_UPROBE_EVENTS). perf 6.1: `You need to check probing points in BPF file`.",
        "./kp.o",
        "Use a tracepoint program, or a kernel with kprobe events.",
    ),
    CodeInfo(
        UPROBE_TARGET,
        "uprobe target binary missing or not ELF",
        "The exec= binary of a uprobe section (or libbpf's uprobe/PATH) does not exist or is not an "
        "ELF file. perf 6.1: `You need to check probing points in BPF file`.",
        "",
        "Give the full path of the probed binary in exec=.",
    ),
    CodeInfo(
        UPROBE_FUNCTION,
        "uprobe function not in the target binary",
        "The target binary has no defined function of that name (or none that matches the glob) in "
        "its symbol tables. perf 6.1: `You need to check probing points in BPF file`.",
        "",
        "Check the function name (`nm -D BINARY`, `perf probe -x BINARY -F`).",
    ),
    CodeInfo(
        PROBE_EXISTS,
        "the same probe is created twice",
        "Two programs (in one object, or an object loaded twice) define the same probe event "
        "perf_bpf_probe:EVENT; without force=yes perf refuses the second: `Probe point exist. Try "
        "'perf probe -d \"*\"' and set 'force=yes'`.",
        "./up1.o,./up1.o",
        "Load the object once, or add force=yes; to the section.",
    ),
    CodeInfo(
        BAD_EVENT_TERM,
        "term not valid for BPF events",
        "The events a BPF object creates are tracepoints; they take only call-graph, stack-size, "
        "inherit, no-inherit, max-stack, nr, overwrite, no-overwrite, aux-output and "
        "aux-sample-size. perf 6.1: `Attach events in BPF object failed`, initial error `unknown "
        "term`.",
        "./maps.o/name=foo/",
        "Remove the term (BPF events cannot be renamed).",
    ),
)
