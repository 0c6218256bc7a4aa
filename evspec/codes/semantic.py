"""Codes of the semantic checks against a described system (``EM…`` errors, ``WM…`` warnings
and the note WM002, which says what a check without a system left unchecked)."""

from __future__ import annotations

from evspec.codes import CodeInfo

CODES: tuple[CodeInfo, ...] = (
    CodeInfo(
        "EM001",
        "unknown PMU",
        "The name before '/terms/' is no PMU of the system (none in /sys/bus/event_source/devices), "
        "no PMU named by it through perf's wildcard rule (NAME followed by digits or _digits, "
        "'uncore_' ignored: 'uncore_imc' names 'uncore_imc_0'), and no PMU event alias. perf: "
        '"Cannot find PMU `NAME\'. Missing kernel support?"',
        "nosuchpmu/config=1/",
        "Check the PMU name with 'evspec list pmu'; the PMU may need a kernel module or other hardware.",
    ),
    CodeInfo(
        "EM002",
        "unknown event",
        "A name is an event of the PMUs that have it (perf 7.3): hardware and cache names of every "
        "core PMU, software names of the software PMU, tool names of perf's tool PMU, and the "
        "events/NAME aliases of sysfs, all in any letter case; no PMU of the system has this one. "
        "perf: 'Bad event name'.",
        "cyclez",
        "Check the spelling, or list the events with 'evspec list'.",
    ),
    CodeInfo(
        "EM003",
        "unknown term for a PMU",
        "A term inside 'PMU/.../' is neither a built-in term (config, period, name, ...) nor a "
        "format term of that PMU (format/NAME) nor one of its event aliases. perf: "
        "\"unknown term 'X' for pmu 'P'\" with the list of valid terms.",
        "msr/bogus/",
        "Use one of the terms the help lists.",
    ),
    CodeInfo(
        "EM004",
        "format term expects a number",
        "A PMU format term places its value into bits of the attr config; it takes a number. "
        "perf: 'expected numeric value'.",
        "power/event=abc/",
        "Write the value as a decimal or 0x-hex number.",
    ),
    CodeInfo(
        "EM005",
        "value too big for format",
        "The value does not fit the bits the PMU's format file gives the term. perf: 'value too "
        "big for format, maximum is N' (and perf silently truncates when it cannot report).",
        "power/event=0x100/",
        "Use a value up to the maximum.",
    ),
    CodeInfo(
        "EM006",
        "format term without a value",
        "A bare format term means 'set to 1', which is only meaningful for a one-bit field. A "
        "bare multi-bit term is an error (perf 6.1 accepts it by accident through its wildcard "
        "retry; later perf says 'no value assigned for term').",
        "msr/event/",
        "Give the value: 'msr/event=0x4/'.",
    ),
    CodeInfo(
        "EM007",
        "two aliases in one PMU event",
        "Each PMU event alias is a whole event encoding; two of them in one '/.../' term list "
        "overwrite each other's bits (perf fails silently).",
        "msr/tsc,smi/",
        "Write two events: 'msr/tsc/,msr/smi/'.",
    ),
    CodeInfo(
        "EM008",
        "missing alias parameter",
        "The alias definition has a term with the value '?': the user must supply that term as "
        "NAME=VALUE in the same term list (perf: \"Required parameter 'NAME' not specified\").",
        "cpu/ld_lat.any/",
        "Add the parameter: 'cpu/ld_lat.any,ldlat=3/'.",
    ),
    CodeInfo(
        "EM009",
        "unknown tracepoint",
        "No tracepoint SYSTEM:EVENT in the system's tracefs (events/SYSTEM/EVENT/id), or an event "
        "glob matched no event. perf: 'unknown tracepoint'.",
        "sched:nosuch",
        "List tracepoints with 'evspec list tracepoint' or 'evspec list \"sched:*\"'.",
    ),
    CodeInfo(
        "EM010",
        "tracepoint system glob matches nothing",
        "No trace system matches the glob in the system part (perf prints only 'WARNING: event "
        "parser found nothing').",
        "nosu*:foo",
        "Check the glob against 'evspec list tracepoint'.",
    ),
    CodeInfo(
        "EM011",
        "tracefs not available",
        "Tracepoints are looked up in tracefs (/sys/kernel/tracing or /sys/kernel/debug/tracing); "
        "it is not mounted or not readable.",
        "sched:sched_switch",
        "As root: 'mount -t tracefs nodev /sys/kernel/tracing' (evspec does this itself when run "
        "as root), or check against a snapshot of a machine that has it.",
    ),
    CodeInfo(
        "EM012",
        "term not usable in perf stat",
        "perf stat keeps only the terms config, config1-4, name, metric-id, period, percore, cpu "
        "(perf 7.3; perf 6.1: config, config1, config2, name, metric-id, period, percore) and PMU "
        "format terms. perf: \"'TERM' is not usable in 'perf stat'\".",
        "cpu-clock/call-graph=fp/",
        "Drop the term for perf stat, or check with '--mode record'.",
    ),
    CodeInfo(
        "EM013",
        "event needs a system description",
        "Compiling a tracepoint, PMU event or PMU alias needs the machine's sysfs/tracefs (ids, "
        "PMU types, format bits); no system was given.",
        "sched:sched_switch",
        "Pass '--system live' or a snapshot file.",
    ),
    CodeInfo(
        "EM014",
        "invalid PMU alias definition",
        "The system's alias file (events/NAME) does not parse as a term list or uses a term the "
        "PMU does not have; the event cannot be encoded.",
        "",
        "Fix or regenerate the system snapshot.",
    ),
    CodeInfo(
        "EM015",
        "event cannot be compiled",
        "The compiler was given an event that breaks a system-independent rule (an invalid cache "
        "operation, for example); the syntax checks report the details.",
        "L1-icache-stores",
        "Run 'evspec check' on the string and fix what it reports.",
    ),
    CodeInfo(
        "EM016",
        "cpu= beyond the system's CPUs",
        "cpu=N opens the event on CPU N; the system has fewer CPUs (perf: 'too big').",
        "cpu-clock/cpu=4096/",
        "Use a CPU the machine has ('evspec system snapshot' records them).",
    ),
    CodeInfo(
        "EM017",
        "cpu= names no PMU and no CPU list",
        "cpu=WORD takes the CPUs of the PMU named WORD; the system has none, and WORD is no CPU "
        "list either (perf: 'not a valid PMU or CPU number').",
        "cpu-clock/cpu=cpu_core/",
        "Name a PMU of the system, or give CPU numbers: cpu=0-3.",
    ),
    CodeInfo(
        "EM018",
        "legacy config term on a PMU that is no core PMU",
        "legacy-hardware-config= and legacy-cache-config= make a CPU PMU's event a legacy hardware "
        "or cache event; on another PMU perf refuses them ('needs a core PMU').",
        "msr/legacy-hardware-config=1/",
        "Use the term on a core PMU (cpu, cpu_core, cpu_atom).",
    ),
    CodeInfo(
        "EM019",
        "the chosen perf release refuses the string",
        "'evspec compile --perf VERSION' computes the attrs that release computes; this string is "
        "one that release refuses (a term, modifier or form it does not know, or the message its "
        "parser gives), so it computes none.",
        "cpu-clock/config3=1/ (with --perf 6.1)",
        "Compile for a newer release, or write the string that release knows; "
        "'evspec check --perf VERSION' explains its verdict where it is emulated.",
    ),
    CodeInfo(
        "WM001",
        "no hardware PMU",
        "Hardware, cache and raw events count through the CPU's PMU; this system has none (a VM "
        "without PMU passthrough, for example). What perf then does depends on the tool (--mode):\n"
        "- perf record, per task and with -a: 'cycles' (cpu-cycles, any modifiers or terms) is "
        "sampled as a software clock without a word (perf 6.1: cpu-clock; perf 7.x: task-clock per "
        "task, cpu-clock with -a; -v says so): this warning. Every other such event makes perf "
        "record fail: error EM030.\n"
        "- perf stat, per task and with -a: the event shows as <not supported> (perf 6.1, exit 0); "
        "perf 7.x fails with 'No supported events found.' when no event of the command can be "
        "counted: this warning. A group such an event leads is not counted at all: error EM031.\n"
        "Observed with perf 6.1 and 7.2 on such a machine (tests/data/perf_runtime/).",
        "cycles",
        "Use software events (cpu-clock, task-clock) on this machine, or check against a snapshot of "
        "the machine the events are meant for.",
    ),
    CodeInfo(
        "EM030",
        "perf record cannot open the event (no hardware PMU)",
        "A hardware, cache or raw event other than cycles, on a system without a hardware PMU: perf "
        "record fails, per task and with -a (perf 6.1: 'The instructions event is not supported.', "
        "exit 255); perf 7.x drops the event ('Failure to open event ... which will be removed.'), "
        "records the others, and fails when none is left. cycles is sampled as a software clock "
        "instead (WM001). perf stat shows such events as <not supported> (--mode stat).",
        "instructions:u",
        "Record software events (cpu-clock, task-clock) here, or check against a snapshot of the "
        "machine the events are meant for.",
    ),
    CodeInfo(
        "EM031",
        "perf stat cannot count the group (no hardware PMU)",
        "A group led by a hardware, cache or raw event, on a system without a hardware PMU: perf "
        "stat 6.1 fails ('The cycles event is not supported.', exit 255) and perf 7.x counts no "
        "event of the group (and fails when nothing else is left). Outside a group, or after a "
        "countable leader, the event only shows as <not supported> (WM001).",
        "{cycles,instructions}",
        "Put an event this machine can count first ('{cpu-clock,cycles}'), or count it outside "
        "the group.",
    ),
    CodeInfo(
        "EM032",
        "perf record cannot sample an event of a PMU that only counts",
        "The kernel drivers of msr, power (RAPL), cstate and uncore PMUs (and any PMU with a "
        "cpumask) refuse a sampling event (EINVAL). perf record samples: per task it says \"Invalid "
        "event (msr/tsc/) in per-thread mode, enable system wide with '-a'.\", and with -a the open "
        "fails the same way (perf 6.1 exits 255; perf 7.x drops the event, records the others, "
        "and fails when none is left). perf stat counts such events (--mode stat).",
        "msr/tsc/",
        "Count the event with perf stat.",
    ),
    CodeInfo(
        "WM002",
        "names not verified (a note)",
        "Checked without a system (--system none, the default of check), the syntax and the "
        "rules that hold on every machine are checked; whether a word is a PMU event alias, a "
        "tracepoint exists, a PMU has a term or a BPF object is there, only a machine can tell. "
        "One note per run lists those names (the first ten; all are counted), where each first "
        "stands and how many strings name it, and a built-in event near a name that is no "
        "built-in one ('cyles': did you mean 'cycles'?). A note fails no check.",
        "cyles",
        "Check against this machine with '--system live', or against another with a snapshot "
        "written there by 'evspec system snapshot -o FILE' and '--system FILE'.",
    ),
)
