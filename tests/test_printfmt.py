"""Tracepoint records printed by their format's ``print fmt`` as perf 6.1's libtraceevent prints
them: against perf 6.1's own output for a capture it made (committed: tests/data/printfmt), its
quirks one by one on made-up formats, every format of this machine, and perf 6.1 live."""

from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path

import pytest
from evspec.loader.output.printfmt import PrintFormat
from evspec.loader.output.printfmt.pointers import pointer_extent
from evspec.loader.output.tracefs_format import parse_format
from record_cli import run_script

DATA = Path(__file__).parent / "data" / "printfmt"
COMMON = (
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
)


def printer(fields: str, print_fmt: str, **kw: object) -> PrintFormat:
    """The printer of a format with ``fields`` (``DECL;offset:N;size:N;signed:N`` lines after
    the common ones) and ``print_fmt``."""
    lines = "".join(f"\tfield:{line.strip()}\n" for line in fields.strip().splitlines())
    text = f"name: demo\nID: 9\nformat:\n{COMMON}{lines}\nprint fmt: {print_fmt}\n"
    fmt = parse_format(text, "demo", "demo")
    return PrintFormat.compile(fmt.print_fmt, fmt.fields, **kw)  # type: ignore[arg-type]


def record(*values: tuple[str, int], size: int = 64) -> bytes:
    """A record of ``size`` bytes, the common header zero, ``(struct format, value)`` from byte 8."""
    raw = bytearray(size)
    at = 8
    for code, value in values:
        struct.pack_into("<" + code, raw, at, value)
        at += struct.calcsize(code)
    return bytes(raw)


U32 = "unsigned int a;\toffset:8;\tsize:4;\tsigned:0;"
THREE = (U32 + "\nunsigned int b;\toffset:12;\tsize:4;\tsigned:0;"
         "\nunsigned int c;\toffset:16;\tsize:4;\tsigned:0;")


# ---------------------------------------------------------------- perf 6.1's own output


def test_perf_61_capture_prints_as_perf_61_printed_it() -> None:
    """tests/data/printfmt/make.sh: 335 records of 16 tracepoints (syscalls, sched, signal, rcu's
    printk strings, kmem's gfp flags) and perf 6.1's perf script of them."""
    status, out, err = run_script("-i", str(DATA / "perf61.data"))
    assert status == 0, err
    assert out.splitlines() == (DATA / "perf61.script").read_text().splitlines()


# ---------------------------------------------------------------- libtraceevent's grammar


def test_an_operand_of_lower_precedence_is_rotated_parentheses_or_not() -> None:
    """perf prints timer:timer_start's flags as D|P|I where they are 0: ``a & (b | c)`` is
    parsed as ``(a & b) | c``."""
    p = printer(U32, '"%x", REC->a & (0x1 | 0x80000)')
    assert p.render(record(("I", 0x04800001))) == "80001"


def test_operators_of_equal_precedence_group_to_the_right() -> None:
    p = printer(THREE, '"%d", REC->a - REC->b - REC->c')
    assert p.render(record(("I", 10), ("I", 5), ("I", 2))) == "7"  # 10 - (5 - 2)


def test_a_cast_narrows_and_a_pointer_type_is_a_type() -> None:
    p = printer(U32, '"%u %lx", (u8)REC->a, (char *)REC->a')
    assert p.render(record(("I", 0x1FF))) == "255 1ff"


def test_conversions_libtraceevent_does_not_know_print_their_letter() -> None:
    """``%c``, and ``%+d`` (its ``+`` taken for the letter), print ``>c<``/``>+<`` and take no
    argument; the argument goes to the next conversion."""
    p = printer(U32, '"%c|%+d|%u", REC->a')
    assert p.render(record(("I", 7))) == ">c<|>+<d|7"


@pytest.mark.parametrize("print_fmt", [
    '"%d", sizeof(int)',  # a function libtraceevent does not define
    '"%d %d", REC->a',  # a conversion without an argument
    '"%d", REC->nosuch',
    '"%d", REC->a[REC->a + 1]',  # an index of more than one operand
])
def test_what_libtraceevent_cannot_parse_prints_perfs_fallback(print_fmt: str) -> None:
    p = printer(U32 + "\nchar comm[8];\toffset:12;\tsize:8;\tsigned:0;", print_fmt)
    assert p.failed
    raw = record(("I", 42), ("8s", b"sh"))
    assert p.render(raw) == "[FAILED TO PARSE] a=42 comm=sh"


def test_numbers_are_cut_to_their_c_type_before_printf() -> None:
    p = printer(U32 + "\nlong b;\toffset:16;\tsize:8;\tsigned:1;",
                '"%d %u %x %ld %lu %hhd %#x %#x %08.3d|%-5d|%*d|%o %#o", REC->a, REC->a, REC->a, REC->b, REC->b, '
                'REC->a, REC->a, 0, REC->a, 1, 4, 2, 8, 8')
    assert p.render(record(("I", 0xFFFFFFFF), ("I", 0), ("q", -2))) == (
        "-1 4294967295 ffffffff -2 18446744073709551614 -1 0xffffffff 0     -001|1    |   2|10 010")


def test_strings_fields_and_printk_strings() -> None:
    fields = ("__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
              "char comm[8];\toffset:12;\tsize:8;\tsigned:0;\n"
              "const char * s;\toffset:24;\tsize:8;\tsigned:0;")
    p = printer(fields, '"%s|%-4s|%.2s|%s|%s", __get_str(name), REC->comm, REC->comm, REC->s, REC->s',
                printk={0xFFFFFFFF81000000: "Start scheduler-tick"})
    raw = record(("I", (4 << 16) | 32), ("8s", b"sh"), ("I", 0), ("Q", 0xFFFFFFFF81000000), ("4s", b"abc\0"))
    assert p.render(raw) == "abc|sh  |sh|Start scheduler-tick|Start scheduler-tick"
    other = record(("I", (4 << 16) | 32), ("8s", b"sh"), ("I", 0), ("Q", 0x1234), ("4s", b"abc\0"))
    assert p.render(other) == "abc|sh  |sh|1234|1234"  # no 0x, as libtraceevent prints it


def test_flags_symbols_and_conditions() -> None:
    p = printer(U32, '"%s %s %s %s", __print_flags(REC->a, "|", { 1, "A" }, { 2, "B" }), '
                     '__print_symbolic(REC->a, { 0, "zero" }, { 7, "seven" }), REC->a ? "yes" : "no", '
                     '__print_flags(REC->a & 8, "", { HI_SOFTIRQ, "s" }, { NOT_A_NUMBER, "x" })')
    assert p.render(record(("I", 7))) == "A|B|0x4 seven yes x"
    # eval_flag(): HI_SOFTIRQ is 0 (never printed), a name it does not know -1 (printed for 0)
    assert p.render(record(("I", 0))) == " zero no x"


def test_arrays_hex_and_bitmasks() -> None:
    fields = ("__data_loc u8[] buf;\toffset:8;\tsize:4;\tsigned:0;\n"
              "__data_loc unsigned long[] mask;\toffset:12;\tsize:4;\tsigned:0;")
    p = printer(fields, '"%s|%s|%s|%d|%s", __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), '
                        '__print_hex_str(__get_dynamic_array(buf), 2), __print_array(__get_dynamic_array(buf), 3, 1), '
                        '__get_dynamic_array_len(buf), __get_bitmask(mask)')
    head = record(("I", (3 << 16) | 16), ("I", (8 << 16) | 24), size=16)
    raw = head + b"\x01\xab\xff" + bytes(5) + (0x1_0000_00FF).to_bytes(8, "little")
    assert p.render(raw) == "01 ab ff|01ab|1 171 255|3|00000001,000000ff"


def test_pointers() -> None:
    fields = ("void * p;\toffset:8;\tsize:8;\tsigned:0;\n"
              "unsigned char mac[6];\toffset:16;\tsize:6;\tsigned:0;\n"
              "__u8 v4[4];\toffset:24;\tsize:4;\tsigned:0;\n"
              "__u8 v6[16];\toffset:28;\tsize:16;\tsigned:0;\n"
              "__u8 sa[28];\toffset:44;\tsize:28;\tsigned:0;\n"
              "__u8 uuid[16];\toffset:72;\tsize:16;\tsigned:0;")
    p = printer(fields, '"%p %pS %ps %pM %pI4 %pi4 %pI6c %pI6 %pISpc %pU %pM", REC->p, REC->p, REC->p, REC->mac, '
                        'REC->v4, REC->v4, REC->v6, REC->v6, REC->sa, REC->uuid, REC->v4',
                resolve=lambda addr: ("tick_sched_timer", addr - 0x10))
    v6 = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])
    sockaddr = struct.pack("<H", 10) + (8080).to_bytes(2, "big") + bytes(4) + bytes(15) + b"\x01" + bytes(4)
    raw = (bytes(8) + (0xFFFFFFFF81001234).to_bytes(8, "little") + bytes.fromhex("0a1b2c3d4e5f") + bytes(2)
           + bytes([192, 168, 0, 7]) + v6 + sockaddr + bytes(range(16)) + bytes(8))
    assert p.render(raw) == (
        "0xffffffff81001234 tick_sched_timer+0x10 tick_sched_timer 0a:1b:2c:3d:4e:5f 192.168.0.7 192.168.000.007 "
        "::ffff:10.0.0.1 0000:0000:0000:0000:0000:ffff:0a00:0001 [::1]:8080 "
        "00010203-0405-0607-0809-0a0b0c0d0e0f INVALIDMAC")
    assert printer(fields, '"%p", REC->p').render(bytes(96)) == "(nil)"
    assert [pointer_extent(f, 0) for f in ("S", "MF", "I4h", "I6c", "ISpc", "Ub", "hC", "x")] == [1, 2, 3, 3, 4, 2, 2, 0]


def test_random_records_never_break_a_printer() -> None:
    """Whatever the bytes (cut records, offsets past the end), a printer prints and never raises."""
    fields = ("__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n" + THREE.replace("offset:8", "offset:20")
              .replace("offset:12", "offset:24").replace("offset:16", "offset:28"))
    p = printer(fields, '"%s %d %pI4 %s", __get_str(name), REC->a / REC->b, REC->c, '
                        '__print_hex(__get_dynamic_array(name), REC->c)')
    rng = random.Random(7)
    for _ in range(500):
        p.render(bytes(rng.randrange(256) for _ in range(rng.randrange(40))))


# ---------------------------------------------------------------------------- this machine


def test_every_format_of_this_machine_compiles_and_prints(tracefs: Path) -> None:
    rng = random.Random(1)
    files = sorted((tracefs / "events").glob("*/*/format"))
    assert len(files) > 500
    failed = 0
    for path in files:
        fmt = parse_format(path.read_text(), path.parent.parent.name, path.parent.name)
        p = PrintFormat.compile(fmt.print_fmt, fmt.fields)
        failed += p.failed
        p.render(bytes(rng.randrange(256) for _ in range(128)))
    assert failed < len(files) // 10, f"{failed} of {len(files)} formats fall back"


def test_perf_61_script_of_a_live_capture(tracefs: Path, perf_binary: str, tmp_path: Path) -> None:
    """perf 6.1 records whole tracepoint systems over a small workload; evspec script of its file
    prints what perf script prints, line for line (kernel symbols of %pS included: both read this
    machine's)."""
    systems = [s for s in ("syscalls", "sched", "signal", "timer", "rcu", "task", "irq", "workqueue")
               if (tracefs / "events" / s).is_dir()]
    data = tmp_path / "perf.data"
    workload = "cat /etc/hostname > /dev/null; sleep 0.02; ls / > /dev/null"
    done = subprocess.run([perf_binary, "record", "-q", "-o", str(data), *(f"-e{s}:*" for s in systems), "--",
                           "sh", "-c", workload], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    perf = subprocess.run([perf_binary, "script", "-i", str(data)], capture_output=True, text=True, check=True)
    status, out, err = run_script("-i", str(data))
    assert status == 0, err
    ours = [line for line in out.splitlines() if not line.startswith(("LOST ", "LOST_SAMPLES "))]
    assert len(ours) > 100 and ours == perf.stdout.splitlines()
