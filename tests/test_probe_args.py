"""Probe fetch arguments: syntax, registers of both architectures, special variables, @SYMBOL, and
named parameters located through DWARF in tests/data/prologue/target.c built with -O2 -g and
-O0 -g (cc, and clang when installed)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.sections.names import ProbeArg
from evspec.loader.sections.probe_args import (
    AARCH64,
    X86_64,
    Deref,
    FetchPlace,
    Register,
    Special,
    SymbolRef,
    ValueType,
    Variable,
    body_address,
    parse_fetch,
    parse_type,
    resolve_args,
)

from evspec.span import Span

DATA = Path(__file__).parent / "data" / "prologue"
SP, IP = X86_64.regs["sp"], X86_64.regs["ip"]
DI, SI, DX, BP = (X86_64.regs[r] for r in ("di", "si", "dx", "bp"))


def arg(fetch: str, type: str | None = None, name: str | None = None) -> ProbeArg:
    return ProbeArg(name, fetch, type, Span(0, len(fetch)))


def resolve(*fetches: str, arch: str = "x86_64", **kw: object) -> tuple[FetchPlace, ...]:
    site: dict[str, object] = {"binary": None, "function": None, "address": None}
    site.update(kw)
    return resolve_args([arg(f) for f in fetches], arch=arch, **site)  # type: ignore[arg-type]


def code_of(excinfo: pytest.ExceptionInfo[ObjectError]) -> str:
    return excinfo.value.code


# ----------------------------------------------------------------- syntax


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("%di", Register("di")),
        ("$stack3", Special("stack3")),
        ("@jiffies", SymbolRef("jiffies", 0)),
        ("@counter-0x10", SymbolRef("counter", -16)),
        ("+8(%di)", Deref(8, Register("di"))),
        ("-0x10(+4(%x0))", Deref(-16, Deref(4, Register("x0")))),
        ("file->f_mode", Variable("file", (("->", "f_mode"),))),
        ("p.q[3]->r", Variable("p", ((".", "q"), ("[]", "3"), ("->", "r")))),
    ],
)
def test_fetch_syntax(text: str, parsed: object) -> None:
    assert parse_fetch(text) == parsed


@pytest.mark.parametrize("text", ["+8(%di", "+8(%di))", "@", "@9x", "p->", "p-q", "#1", "8(%di)"])
def test_fetch_syntax_errors(text: str) -> None:
    with pytest.raises(ObjectError) as info:
        parse_fetch(text)
    assert code_of(info) == "EK130"
    assert text in info.value.message


@pytest.mark.parametrize(
    ("text", "vtype"),
    [
        ("u8", ValueType(1, False)),
        ("s16", ValueType(2, True)),
        ("x32", ValueType(4, False)),
        ("s64", ValueType(8, True)),
        ("b3@5/16", ValueType(2, False, 5, 3)),
    ],
)
def test_types(text: str, vtype: ValueType) -> None:
    assert parse_type("a", text) == vtype


@pytest.mark.parametrize(("text", "why"), [("string", "register"), ("u12", "unknown"), ("b9@0/8", "container")])
def test_type_errors(text: str, why: str) -> None:
    with pytest.raises(ObjectError) as info:
        parse_type("a", text)
    assert code_of(info) == "EK137"
    assert why in info.value.message


def test_a_written_type_overrides_the_default() -> None:
    (place,) = resolve_args([arg("%ax", "s8", name="v")], binary=None, function=None, address=None, arch="x86_64")
    assert place.type == ValueType(1, True)
    assert place.name == "v=%ax"


# ----------------------------------------------------------------- registers and specials


def test_x86_64_registers_and_their_64_bit_spellings() -> None:
    places = resolve("%di", "%rdi", "%r15")
    assert [p.reg_offset for p in places] == [112, 112, 0]
    assert all(p.derefs == () and p.type == ValueType() for p in places)


def test_aarch64_registers() -> None:
    places = resolve("%x0", "%lr", "%pc", arch="aarch64")
    assert [p.reg_offset for p in places] == [0, 240, 256]


def test_unknown_register_lists_the_known_ones() -> None:
    with pytest.raises(ObjectError) as info:
        resolve("%x1")
    assert code_of(info) == "EK131"
    assert "x86_64 has no register '%x1'" in info.value.message
    assert "%di" in info.value.help[0]


def test_stack_and_arguments() -> None:
    stack, stack2, arg2 = resolve("$stack", "$stack2", "$arg2")
    assert (stack.reg_offset, stack.derefs) == (SP, ())
    assert (stack2.reg_offset, stack2.derefs) == (SP, (16,))
    assert (arg2.reg_offset, arg2.derefs) == (SI, ())
    (arg7,) = resolve("$arg7")  # the first stack argument, above the return address
    assert (arg7.reg_offset, arg7.derefs) == (SP, (8,))
    (a9,) = resolve("$arg9", arch="aarch64")
    assert (a9.reg_offset, a9.derefs) == (AARCH64.regs["sp"], (0,))


def test_retval_only_in_return_probes() -> None:
    (ret,) = resolve("$retval", retprobe=True)
    assert ret.reg_offset == X86_64.regs["ax"]
    with pytest.raises(ObjectError) as info:
        resolve("$retval")
    assert code_of(info) == "EK130" and "return probes" in info.value.message


@pytest.mark.parametrize("special", ["$comm", "$params", "$vars", "$arg0", "$nope"])
def test_specials_a_prologue_cannot_fetch(special: str) -> None:
    with pytest.raises(ObjectError) as info:
        resolve(special)
    assert code_of(info) == "EK130"


def test_dereference_chain_keeps_the_order_of_reads() -> None:
    (place,) = resolve("-8(+16(%di))")
    assert (place.reg_offset, place.derefs) == (DI, (16, -8))
    assert place.describe() == "*(*(regs+112+16)-8):u64"


def test_more_than_three_arguments() -> None:
    with pytest.raises(ObjectError) as info:
        resolve("%di", "%si", "%dx", "%cx", "%r8")
    assert code_of(info) == "EK132"
    assert "'%cx', '%r8' cannot be passed" in info.value.message


def test_kernel_symbol_from_kallsyms(tmp_path: Path) -> None:
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text("ffffffff81000000 T _stext\nffffffff82a05000 D jiffies_64\n0000000000000000 D hidden\n")
    (place,) = resolve("@jiffies_64+8", kallsyms=str(kallsyms))
    assert (place.reg_offset, place.address, place.derefs) == (None, 0xFFFFFFFF82A05000, (8,))
    for name, why in (("hidden", "kptr_restrict"), ("absent", "no symbol")):
        with pytest.raises(ObjectError) as info:
            resolve(f"@{name}", kallsyms=str(kallsyms))
        assert code_of(info) == "EK138"
        assert why in info.value.message + " ".join(info.value.help)


# ----------------------------------------------------------------- built targets


def _build(compiler: str, opt: str, out: Path, debug: bool = True) -> Path:
    argv = [compiler, opt, *(["-g"] if debug else []), "-o", str(out), str(DATA / "target.c")]
    subprocess.run(argv, check=True, capture_output=True)
    return out


def _symbol(binary: Path, name: str) -> int:
    out = subprocess.run(["nm", str(binary)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == name:
            return int(fields[0], 16)
    raise AssertionError(f"{name} not in {binary}")


IN_CI = os.environ.get("CI") == "true"
# clang is installed in CI (scripts/test.sh): there its targets are built, or the build fails
COMPILERS = ["cc"] + (["clang"] if IN_CI or shutil.which("clang") else [])


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("cc") is None:
        if IN_CI:
            pytest.fail("cc is required in CI (scripts/test.sh installs it)")
        pytest.skip("no C compiler")
    if "clang" in COMPILERS and shutil.which("clang") is None:
        pytest.fail("clang is required in CI (scripts/test.sh installs it)")
    d = tmp_path_factory.mktemp("prologue-targets")
    built = {f"{c}{o}": _build(c, o, d / f"target-{c}{o}") for c in COMPILERS for o in ("-O2", "-O0")}
    built["nodebug"] = _build("cc", "-O2", d / "target-nodebug", debug=False)
    return built


def uprobe(binary: Path, *fetches: str, function: str, address: int | None = None,
           retprobe: bool = False) -> tuple[FetchPlace, ...]:
    return resolve_args([arg(f) for f in fetches], binary=str(binary), function=function,
                        address=address, retprobe=retprobe, arch="x86_64")


@pytest.fixture(autouse=True, scope="module")
def _x86_64_only() -> None:
    """The DWARF expectations are for x86_64 builds: elsewhere this module is skipped, in CI
    (an x86_64 machine) it fails."""
    machine = platform.machine()
    if machine != "x86_64":
        if IN_CI:
            pytest.fail(f"the DWARF expectations are for x86_64 builds, and CI runs on x86_64; this is {machine}")
        pytest.skip("the DWARF expectations are for x86_64 builds")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_optimised_parameters_are_in_argument_registers_at_entry(targets: dict[str, Path], compiler: str) -> None:
    binary = targets[f"{compiler}-O2"]
    a, b, c = uprobe(binary, "a", "b", "c", function="add3")
    assert [(p.reg_offset, p.derefs, p.type) for p in (a, b, c)] == [
        (DI, (), ValueType(8, True)), (SI, (), ValueType(8, True)), (DX, (), ValueType(8, True))
    ]
    entry = _symbol(binary, "add3")
    assert uprobe(binary, "a", "b", "c", function="add3", address=entry) == (a, b, c)
    small = uprobe(binary, "c", "u", "neg", function="narrow")
    assert [p.type for p in small] == [ValueType(1, True), ValueType(2, False), ValueType(4, True)]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_members_behind_a_pointer(targets: dict[str, Path], compiler: str) -> None:
    x, y, z = uprobe(targets[f"{compiler}-O2"], "p->x", "p->y", "p->z", function="scaled")
    assert [(p.reg_offset, p.derefs, p.type) for p in (x, y, z)] == [
        (DI, (0,), ValueType(8, True)), (DI, (8,), ValueType(4, True)), (DI, (12,), ValueType(2, True))
    ]
    tag, p, scale = uprobe(targets[f"{compiler}-O2"], "p->tag[2]", "p", "scale", function="scaled")
    assert (tag.derefs, tag.type) == ((16,), ValueType(1, False))
    assert (p.reg_offset, p.derefs, p.type) == (DI, (), ValueType(8, False))
    assert (scale.reg_offset, scale.type) == (SI, ValueType(4, True))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_unoptimised_parameters_are_in_the_frame_after_the_prologue(targets: dict[str, Path], compiler: str) -> None:
    binary = targets[f"{compiler}-O0"]
    with pytest.raises(ObjectError) as info:
        uprobe(binary, "a", function="add3")
    assert code_of(info) == "EK135"
    body = body_address(str(binary), "add3")
    assert body is not None and body > _symbol(binary, "add3")
    assert f"{body:#x}" in info.value.help[0]
    a, b, c = uprobe(binary, "a", "b", "c", function="add3", address=body)
    # all three in memory at fixed distances from one frame register (rbp after `mov %rsp,%rbp`)
    assert {p.reg_offset for p in (a, b, c)} == {BP}
    assert sorted(p.derefs[0] for p in (a, b, c))[::-1] == [a.derefs[0], b.derefs[0], c.derefs[0]]
    assert a.derefs[0] - b.derefs[0] == b.derefs[0] - c.derefs[0] == 8
    x, tag = uprobe(binary, "p->x", "p->tag[2]", function="scaled", address=body_address(str(binary), "scaled"))
    assert x.reg_offset == BP and len(x.derefs) == 2 and x.derefs[1] == 0
    assert tag.derefs[1] == 16 and tag.type == ValueType(1, False)


def test_optimised_out_parameters(targets: dict[str, Path]) -> None:
    binary = targets["cc-O2"]
    # main's argc lives in %rdi only until it is consumed; later only its entry value is known
    with pytest.raises(ObjectError) as info:
        uprobe(binary, "argc", function="main", address=_symbol(binary, "main") + 0x30)
    assert code_of(info) == "EK135"
    if "clang-O2" in targets:  # clang gives an unused parameter no location at all
        with pytest.raises(ObjectError) as info:
            uprobe(targets["clang-O2"], "used", "unused", function="ignores")
        assert code_of(info) == "EK135" and "'unused'" in info.value.message


@pytest.mark.parametrize(
    ("fetch", "function", "code", "words"),
    [
        ("zz", "add3", "EK134", "its parameters: a, b, c"),
        ("p->nope", "scaled", "EK134", "its members: x, y, z, tag"),
        ("a->x", "add3", "EK134", "needs a pointer"),
        ("scale->x", "scaled", "EK134", "needs a pointer"),
        ("p.x", "scaled", "EK134", "needs a structure"),
        ("a", "no_such_function", "EK133", "no out-of-line function"),
    ],
)
def test_dwarf_lookup_errors(targets: dict[str, Path], fetch: str, function: str, code: str, words: str) -> None:
    with pytest.raises(ObjectError) as info:
        uprobe(targets["cc-O2"], fetch, function=function)
    assert code_of(info) == code
    assert words in info.value.message
    assert f"'{fetch}'" in info.value.message


def test_no_debug_information(targets: dict[str, Path]) -> None:
    with pytest.raises(ObjectError) as info:
        uprobe(targets["nodebug"], "a", function="add3")
    assert code_of(info) == "EK133" and "-g" in info.value.help[0]
    assert body_address(str(targets["nodebug"]), "add3") is None


def test_kernel_functions_have_no_dwarf_here() -> None:
    with pytest.raises(ObjectError) as info:
        resolve("file", function="vfs_read")
    assert code_of(info) == "EK133" and "vmlinux" in info.value.message


def test_symbols_are_addressed_from_the_probed_instruction(targets: dict[str, Path]) -> None:
    binary = targets["cc-O2"]
    entry, counter = _symbol(binary, "add3"), _symbol(binary, "counter")
    (place,) = uprobe(binary, "@counter+4", function="add3", address=entry)
    assert (place.reg_offset, place.derefs) == (IP, (counter + 4 - entry,))
    with pytest.raises(ObjectError) as info:
        uprobe(binary, "@counter", function="add3", address=entry, retprobe=True)
    assert code_of(info) == "EK138" and "return probe" in info.value.message
    with pytest.raises(ObjectError) as info:
        uprobe(binary, "@no_such_symbol", function="add3", address=entry)
    assert code_of(info) == "EK138" and "nm" in info.value.help[0]


def test_wrong_architecture_binary(targets: dict[str, Path]) -> None:
    with pytest.raises(ObjectError) as info:
        resolve_args([arg("a")], binary=str(targets["cc-O2"]), function="add3", address=None, arch="aarch64")
    assert code_of(info) == "EK136" and "EM_X86_64" in info.value.message
