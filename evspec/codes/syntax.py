"""ES/WS codes: the grammar (ES001-ES013) and the system-independent rules (ES020-ES058)."""

from __future__ import annotations

from evspec.codes import CodeInfo

CODES: tuple[CodeInfo, ...] = (
    # ---- grammar -------------------------------------------------------------------------
    CodeInfo(
        "ES001", "unexpected token",
        "A word, number or separator stands where the grammar allows none: a ',' with no event "
        "before it, a '}' with no open group, text after a ':' that is neither modifier letters "
        "nor a tracepoint event, text after a group. The span is the unexpected token itself; at "
        "the end of the string it is the last token.",
        ",cycles", "Remove the token, or put the missing event before it.",
    ),
    CodeInfo(
        "ES002", "unexpected character",
        "A character that belongs to no token of the language (perf 6.1 silently skips some of "
        "them, COMPAT 1.2). Quotes only delimit term values; ';' does not separate events.",
        "cycles;instructions", "Remove the character; separate events with ','.",
    ),
    CodeInfo(
        "ES003", "white space not allowed here",
        "Blanks are allowed only around ',', '{' and '}', at both ends of the string and inside an "
        "index list '[ 0, 3...6 ]'. The span is the first blank.",
        "cycles u", "Remove the blank ('cycles:u').",
    ),
    CodeInfo(
        "ES004", "unclosed group, term list, index list or quote",
        "A '{', '/', '[' or \"'\" is never closed. The span is the opening character.",
        "cycles/period=1000", "Add the closing '}', '/', ']' or \"'\".",
    ),
    CodeInfo("ES005", "empty group", "A group '{}' must hold at least one event.", "{}",
             "Put events in the group or remove it."),
    CodeInfo("ES006", "empty index list",
             "An index list of a map: term must hold indices or ranges, or be [all].",
             "./prog.o/map:arr.value[]=1/", "Write the keys, e.g. [0,3...6], or [all]."),
    CodeInfo("ES007", "nested group", "A group cannot contain another group.",
             "{cycles,{instructions}}", "Flatten the groups or separate them with ','."),
    CodeInfo(
        "ES008", "misplaced modifiers",
        "Only one modifier list per event. After a term list, hardware, software, tool, cache, PMU "
        "and BPF events take their modifiers directly ('cycles/period=1/u'; perf 7.2 and later "
        "refuse a ':' there); a group's modifiers follow "
        "':' ('{...}:u'); a BPF object takes modifiers only after a term list ('./x.o//u').",
        "cpu-clock:u:k", "Write all letters in one list, in the place the event kind wants it.",
    ),
    CodeInfo(
        "ES009", "misplaced term list",
        "An event has at most one /term/ list, written before its modifiers; a breakpoint has at "
        "most one /LEN, before its access letters and its term list.",
        "cpu-clock/period=1//", "Put all terms in one list right after the event name.",
    ),
    CodeInfo(
        "ES010", "missing part",
        "A part the construct needs is missing: the CONFIG of a numeric TYPE:CONFIG event, the "
        "address after 'mem:', the length after 'mem:ADDR/', the value after '=', a term name "
        "after ','.",
        "1:", "Complete the construct (e.g. '1:0', 'mem:0x1000/8', 'period=1000').",
    ),
    CodeInfo(
        "ES011", "not a BPF object path",
        "Paths are recognised by their suffix (COMPAT 1.5): a BPF object ends in .o or .obj, a BPF "
        "source in .c ('.bpf.o' is a '.o'). Anything else that looks like a path is no event.",
        "./maps.bpf", "Rename the file so that it ends in .o, .obj or .c.",
    ),
    CodeInfo("ES012", "empty event string", "The string holds no event at all.", "",
             "Write at least one event, e.g. 'cycles'."),
    CodeInfo(
        "ES013", "index list on a term other than map:",
        "Index lists '[0,3...6]' select the keys of a BPF map; only map:NAME.OPTION terms take one.",
        "cpu-clock/period[0]=1/", "Remove the index list.",
    ),
    # ---- rules: modifiers and names ------------------------------------------------------
    CodeInfo(
        "ES020", "unknown modifier",
        "Modifier letters are u k h I G H p P S D W e b R X (perf 7.3). The span is the unknown letter.",
        "cpu-clock:x", "Remove the letter; 'perf list' documents the modifiers.",
    ),
    CodeInfo("ES021", "repeated modifier",
             "No modifier letter other than 'p' may appear twice (perf: 'Bad modifier').",
             "cpu-clock:uu", "Write each letter once."),
    CodeInfo("ES022", "too many 'p' modifiers",
             "The precise level is p, pp or ppp; a fourth 'p' is an error (perf: 'Bad modifier').",
             "cpu-clock:pppp", "Use at most 'ppp' (or 'P' for the maximum the CPU supports)."),
    CodeInfo("ES023", "repeated breakpoint access letter",
             "The access type of mem:ADDR:rwx names each of r, w, x at most once (perf fails "
             "silently).", "mem:0x1000:rr", "Write each letter once."),
    CodeInfo("ES024", "unknown cache operation or result",
             "A cache event is TYPE-OP-RESULT; OP is load/store/prefetch (or an alias), RESULT is "
             "refs/misses (or an alias). The span is the part that is neither.",
             "L1-dcache-lods", "Spell the part as perf list shows it."),
    CodeInfo("ES025", "too many cache parts",
             "A cache event is TYPE, TYPE-OP, TYPE-RESULT or TYPE-OP-RESULT: at most two parts after "
             "the cache type.",
             "L1-dcache-load-misses-misses", "Remove the extra part."),
    CodeInfo("ES026", "cache operation not supported",
             "L1-icache supports load and prefetch only; iTLB and branch support load only (perf "
             "fails silently).", "L1-icache-stores", "Use an operation the cache supports."),
    CodeInfo("ES027", "conflicting or repeated cache parts",
             "A cache event has one operation and one result; a second operation or result, the "
             "same or a different one, is an error (perf 7.2 and later: 'Bad event name'; perf 6.1 "
             "and 6.12 ignored it).", "L1-dcache-load-store",
             "Keep one operation and one result."),
    CodeInfo("ES028", "number out of range",
             "Numbers are unsigned 64-bit: a raw code, a config, a term value, a map value or an "
             "index beyond 64 bits is an error.", "r10000000000000000", "Use a smaller number."),
    CodeInfo("ES029", "numeric event type out of range",
             "The TYPE of TYPE:CONFIG is a 32-bit perf event type (perf silently truncates it).",
             "4294967297:0", "Use the PMU type number from /sys/bus/event_source/devices/*/type."),
    # ---- rules: terms ----------------------------------------------------------------------
    CodeInfo(
        "ES030", "unknown term",
        "Hardware, software, tool, cache, raw, numeric and breakpoint events take only perf's "
        "built-in terms (config, config1-4, name, period, freq, branch_type, time, call-graph, "
        "stack-size, max-stack, nr, inherit, no-inherit, overwrite, no-overwrite, percore, "
        "aux-output, aux-action, aux-sample-size, metric-id, cpu, ratio-to-prev; "
        "legacy-hardware-config and legacy-cache-config on the events of CPU PMUs); other names are "
        "PMU format terms and need a PMU.",
        "cpu-clock/foo=1/", "Use a built-in term, or a PMU event 'pmu/foo=1/'.",
    ),
    CodeInfo(
        "ES031", "term not valid for tracepoints or BPF events",
        "Tracepoints and the events of BPF objects take only call-graph, stack-size, inherit, "
        "no-inherit, max-stack, nr, overwrite, no-overwrite, aux-output, aux-action, aux-sample-size.",
        "sched:sched_switch/name=foo/", "Remove the term.",
    ),
    CodeInfo("ES032", "driver-config term on a non-PMU event",
             "'@cfg' terms are passed to a PMU driver; only PMU events (pmu/@cfg/) take them.",
             "cpu-clock/@cfg/", "Remove the term or use it on a PMU event."),
    CodeInfo("ES034", "term expects a number",
             "config*, period, freq, stack-size, max-stack, nr, inherit, overwrite, aux-output, "
             "aux-sample-size, legacy-hardware-config, legacy-cache-config and time/percore take a "
             "number (perf: 'expected numeric value').",
             "cpu-clock/period=abc/", "Write a decimal or 0x-hex number."),
    CodeInfo("ES035", "term expects a string",
             "name, metric-id, call-graph, branch_type, aux-action and ratio-to-prev take a string "
             "value, and need one (perf: 'expected string value').", "cpu-clock/name=1/",
             "Write a name, or quote it: name='1'."),
    CodeInfo("ES036", "term expects 0 or 1", "time and percore are flags: 0 or 1.",
             "cpu-clock/time=2/", "Write 0 or 1."),
    CodeInfo("ES037", "term value too big",
             "aux-sample-size is at most 4294967295, legacy-hardware-config at most 9, and "
             "legacy-cache-config is TYPE | OP << 8 | RESULT << 16 with TYPE < 7, OP < 3, RESULT < 2 "
             "(perf: 'too big').",
             "cpu-clock/aux-sample-size=4294967296/", "Use a smaller value."),
    CodeInfo("ES038", "unknown call-graph mode",
             "call-graph is fp, dwarf, lbr or no (perf only warns later, when the event is set up).",
             "cpu-clock/call-graph=bogus/", "Use fp, dwarf, lbr or no."),
    CodeInfo("ES039", "invalid branch sample type",
             "branch_type is 'no' or one branch filter: u, k, hv, any, any_call, any_ret, "
             "ind_call, abort_tx, in_tx, no_tx, cond, ind_jmp, call, save_type, stack, priv.",
             "cpu-clock/branch_type=bogus/", "Use one of the filter names."),
    # ---- rules: BPF object terms -----------------------------------------------------------
    CodeInfo("ES040", "map term without option",
             "A map term is map:NAME.OPTION[INDICES]=VALUE with OPTION value or event "
             "(perf: 'Invalid object config option').", "./prog.o/map:arr=1/",
             "Write map:arr.value=1 or map:arr.event=NAME."),
    CodeInfo("ES041", "empty map name",
             "The map name between 'map:' and '.' is empty; no map can match "
             "(perf: \"Target map doesn't exist\").", "./prog.o/map:.value=1/", "Name the map."),
    CodeInfo("ES042", "reversed index range",
             "An index range a...b needs a <= b (perf aborts without a message).",
             "./prog.o/map:arr.value[5...3]=1/", "Write the range low...high."),
    CodeInfo("ES043", "unknown map option",
             "A map term's option is 'value' or 'event' (perf: 'Invalid object map config option').",
             "./prog.o/map:arr.size=1/", "Use .value or .event."),
    CodeInfo("ES044", "map term without value",
             "A map term needs '=VALUE' (perf: \"Config value not set (missing '=')\").",
             "./prog.o/map:arr.value/", "Add =VALUE."),
    CodeInfo("ES045", "wrong value type for a map term",
             ".value takes a number, .event the name of an event (perf: 'Incorrect value type for map').",
             "./prog.o/map:arr.value=abc/", "Give a number to .value and an event name to .event."),
    CodeInfo("ES046", "unknown BPF object term",
             "A BPF object takes map: terms and the tracepoint event terms; any other name is an "
             "error (perf: 'Invalid object config option').", "./prog.o/foo=1/",
             "Write map:NAME.value=... or map:NAME.event=..."),
    CodeInfo(
        "ES047", "event reference not found",
        "map:NAME.event=EVT names an event defined earlier: by its first name= value, else by its "
        "literal text (COMPAT 1.7); forward references fail (perf: 'Event not found for map "
        "setting').",
        "./prog.o/map:channel.event=evt/",
        "Define the event first: 'bpf-output/no-inherit,name=evt/,./prog.o/map:channel.event=evt/'.",
    ),
    CodeInfo(
        "ES048", "malformed program term",
        "A program term of a BPF event is prog:NAME.event=EVENT (COMPAT 1.14): NAME is a perf_event "
        "program of the object, EVENT an event defined earlier, on which the program is attached.",
        "./sampler.bpf.o/prog:on_tick=cpu-clock/",
        "Write prog:NAME.event=EVENT: '-e cpu-clock/freq=99/ -e ./sampler.bpf.o/prog:on_tick.event=cpu-clock/'.",
    ),
    CodeInfo(
        "ES049", "malformed variable term",
        "A variable term of a BPF event is var:NAME=VALUE (COMPAT 1.14): NAME is a global variable "
        "of the object (no '.' part), VALUE a number, true/false, an enumerator's name or a quoted "
        "string; the object's own check says whether the variable exists and takes the value.",
        "./vars.bpf.o/var:targ_pid/",
        "Write var:NAME=VALUE: './vars.bpf.o/var:targ_pid=42,var:targ_comm='bash'/'.",
    ),
    CodeInfo(
        "ES050", "index list on a map:NAME.type term",
        "map:NAME.type=TYPE (COMPAT 1.14) names the BTF type of every record an output map carries "
        "(a ring buffer, or a perf event array through its bpf-output events): it selects no keys.",
        "./typed.bpf.o/map:events.type[0]=event/",
        "Drop the index list: './typed.bpf.o/map:events.type=event/'.",
    ),
    # ---- rules of perf 7.3 (COMPAT 1.15) -----------------------------------------------------
    CodeInfo("ES051", "cache operation after the result",
             "perf 7.3 knows the cache events TYPE, TYPE-OP, TYPE-RESULT and TYPE-OP-RESULT: the "
             "operation comes before the result (perf 6.1 and 6.12 took them in any order).",
             "L1-dcache-misses-load", "Write TYPE-OP-RESULT: 'L1-dcache-load-misses'."),
    CodeInfo("ES052", "weak-group modifier on an event",
             "'W' lets perf open a group's events one by one when the group as a whole does not "
             "fit the counters: it is a group modifier (perf 6.12 and later: 'Weak modifier is for "
             "use with groups'; perf 6.1 accepted it on an event and ignored it).",
             "cpu-clock:W", "Put it on the group: '{cycles,instructions}:W'."),
    CodeInfo("ES053", "combined precise level above 3",
             "A group's 'p' letters add to the precise level of each member: the sum is at most 3 "
             "(perf: 'Maximum combined precise value is 3').",
             "{cycles:pp}:pp", "Use at most 'ppp' between the member and the group."),
    CodeInfo("ES054", "legacy config term on an event of no CPU PMU",
             "legacy-hardware-config= and legacy-cache-config= turn an event of a CPU (core) PMU "
             "into a legacy hardware or cache event; software and tool events have no core PMU "
             "(perf: 'needs a core PMU').",
             "cpu-clock/legacy-hardware-config=1/", "Use the term on a CPU PMU: 'cpu/legacy-hardware-config=1/'."),
    CodeInfo("ES055", "not a CPU list",
             "cpu= takes a CPU number, a CPU list (a range 0-3, or a quoted list '0,2-3') or the "
             "name of a PMU, whose CPUs the event is opened on (perf: 'not a valid PMU or CPU "
             "number').", "cpu-clock/cpu=3-1/", "Write the range low-high."),
    CodeInfo("ES056", "unknown aux-action",
             "aux-action is start-paused (on an AUX area event), pause or resume (on the events of "
             "its group) (perf: \"Bad aux-action '...'\").",
             "cpu-clock/aux-action=stop/", "Use start-paused, pause or resume."),
    CodeInfo("ES057", "bad ratio-to-prev value",
             "ratio-to-prev is a number above zero, written as a word (2.0): the event's period is "
             "that ratio times the period of the event before it in its group (perf: 'zero or "
             "negative', 'too big').", "cpu-clock/ratio-to-prev=abc/", "Write a number: ratio-to-prev=2.0."),
    CodeInfo("ES058", "quoted tracepoint system",
             "A quoted name ('cpu-clock', perf 7.3) is an event or PMU name; a tracepoint is written "
             "without quotes.", "'sched':sched_switch", "Remove the quotes: 'sched:sched_switch'."),
    # ---- warnings --------------------------------------------------------------------------
    CodeInfo("WS002", "term given twice",
             "A built-in term given twice: the last value wins (for name= the first).",
             "cpu-clock/config=1,config=2/", "Remove one of them."),
    CodeInfo("WS003", "variable set twice",
             "Two var: terms of one BPF event set the same global variable: the last value is "
             "written.", "./vars.bpf.o/var:targ_pid=1,var:targ_pid=2/", "Remove one of them."),
    CodeInfo("WS010", "written like a raw event, but not one",
             "A raw event is r followed by hex digits (r1a). A word that starts so but holds a "
             "character that is no hex digit (r1g8), or the 0x form only a term takes (r0x1a: perf "
             "6.1 says 'parser error', perf 7.x 'Bad event name'), is read as a PMU event alias; "
             "without a system that cannot be checked, so the likely typo is a warning. Against a "
             "system that has no such alias it is error EM002 with the same explanation.",
             "r1g8", "Write the raw code in hex (r1a), or check the alias with --system live."),
    CodeInfo("WS004", "ratio-to-prev without an event before it",
             "ratio-to-prev sets an event's period from the event before it in its group; on a "
             "group's first event or an event outside a group perf prints an error and ignores the "
             "term.", "cpu-clock/ratio-to-prev=2.0/",
             "Put it on a later member: '{cycles,instructions/period=200000,ratio-to-prev=2.0/}'."),
)
