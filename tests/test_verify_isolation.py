"""A problem in one part of an object fails the programs it concerns, not the object (libbpf's
behaviour, COMPAT decision 16), in ``evspec verify``, against a libbpf runner on the same objects.

* tests/data/verify/bad_function.c: a function with an ld_imm64 only a loader can fill and no
  relocation. libbpf passes it on and the kernel refuses the one program that calls it; evspec
  refuses that program by name (naming the function) and loads the two others.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.link import link_every_program
from evspec.loader.object.reader import read_object
from libbpf_parity import build_runner, libbpf_verdicts

from evspec.cli import build_parser
from evspec.cli.verify import verify_main

DATA = Path(__file__).parent / "data" / "verify"


def _clang(src: Path, out: Path) -> Path:
    if shutil.which("clang") is None:
        pytest.fail("clang is needed (scripts/test.sh installs it)")
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c", str(src),
                    "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def bad_function(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _clang(DATA / "bad_function.c", tmp_path_factory.mktemp("isolation") / "bad_function.o")


def _verify(*paths: Path) -> tuple[int, dict[str, Any]]:
    args = build_parser("verify").parse_args(["verify", "--format", "json", *map(str, paths)])
    out, err = io.StringIO(), io.StringIO()
    status = verify_main(args, stdout=out, stderr=err)
    assert status in (0, 1), err.getvalue()
    return status, json.loads(out.getvalue())


def test_the_object_is_read_and_only_the_caller_cannot_be_linked(bad_function: Path) -> None:
    spec = read_object(bad_function)
    broken = spec.function("broken")
    assert broken is not None and broken.problem is not None
    assert "an ld_imm64 with src_reg 1 (BPF_PSEUDO_MAP_FD) and no relocation" in broken.problem.message
    assert [p.name for p in spec.programs if p.problem is not None] == []
    with pytest.raises(ObjectError) as caught:
        link_every_program(spec)
    assert caught.value.message.startswith("program 'uses_broken' cannot be linked, through function 'broken' "
                                           "it calls: ")


def test_verify_loads_the_programs_that_do_not_call_it(bad_function: Path, root_kernel: None) -> None:
    status, doc = _verify(bad_function)
    programs = {p["name"]: p for p in doc["programs"]}
    assert status == 1
    assert {name: p["loaded"] for name, p in programs.items()} == {"uses_broken": False, "uses_fine": True,
                                                                   "alone": True}
    refused = programs["uses_broken"]
    assert refused["error"].startswith("program 'uses_broken' cannot be linked, through function 'broken' it calls")
    assert refused["verifier"] is None and refused["errno"] is None  # refused by name, before the kernel


def test_libbpf_fails_the_same_program_alone(bad_function: Path, root_kernel: None,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    runner = build_runner(tmp_path_factory.mktemp("runner"))
    ref = libbpf_verdicts(runner, {"bad_function": bad_function})
    assert {name: v["loaded"] for (_, name), v in ref.items()} == {"uses_broken": False, "uses_fine": True,
                                                                   "alone": True}
    assert ref[("bad_function", "uses_broken")]["errno"] == "EBADF"  # the kernel: fd 1000 is no map


@pytest.fixture(scope="module")
def struct_ops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _clang(DATA / "struct_ops.c", tmp_path_factory.mktemp("isolation") / "struct_ops.o")


def test_struct_ops_maps_are_read_with_their_programs(struct_ops: Path) -> None:
    spec = read_object(struct_ops)
    [m] = spec.struct_ops
    assert (m.name, m.section, m.type_name) == ("evspec_ca", ".struct_ops.link", "tcp_congestion_ops")
    assert m.members == (("ssthresh", "evspec_ssthresh"), ("cong_avoid", "evspec_cong_avoid"),
                         ("undo_cwnd", "evspec_ssthresh"))
    assert [mp.name for mp in spec.maps] == []  # the section is no global data


def test_a_struct_ops_map_refuses_its_programs_by_name_and_no_other(struct_ops: Path, root_kernel: None) -> None:
    status, doc = _verify(struct_ops)
    programs = {p["name"]: p for p in doc["programs"]}
    assert status == 1
    assert {name: p["loaded"] for name, p in programs.items()} == {
        "evspec_ssthresh": False, "evspec_cong_avoid": False, "evspec_unused": False, "plain": True}
    assert programs["evspec_ssthresh"]["error"].startswith(
        "member 'ssthresh' of struct_ops map 'evspec_ca' (struct tcp_congestion_ops): libbpf 1.8 loads it")
    assert programs["evspec_ssthresh"]["errno"] is None  # refused by name: evspec does not do it
    # the program no map names: libbpf 1.8 refuses it before loading ('isn't referenced anywhere')
    assert programs["evspec_unused"]["errno"] == "EINVAL" and "no struct_ops map uses it" in programs[
        "evspec_unused"]["error"]
    [m] = doc["maps"]
    assert (m["name"], m["type"], m["created"]) == ("evspec_ca", "struct_ops", False)
    assert "evspec does not create struct_ops maps" in m["error"]


def test_libbpf_loads_the_ordinary_program_of_a_struct_ops_object(struct_ops: Path, root_kernel: None,
                                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    runner = build_runner(tmp_path_factory.mktemp("runner"))
    ref = libbpf_verdicts(runner, {"struct_ops": struct_ops})
    assert ref[("struct_ops", "plain")]["loaded"]
