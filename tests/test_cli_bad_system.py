"""A system that cannot be used is a usage or I/O error (exit 2) naming the file and the problem,
for every command that reads one (check, list, compile), never a traceback or an internal error;
and the exit status of a command stopped by a signal is 128 + its number."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import zlib
from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

from evspec.cli import main
from evspec.cli.app import EXIT_USAGE
from evspec.system.fixtures import corpus_data
from evspec.system.snapshot import SnapshotError, decode_btf, encode_btf, read_snapshot

COMMANDS = (("check", "-e", "cycles"), ("list",), ("compile", "-e", "cpu-clock"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out + err


def _written(tmp_path: Path, data: Any, name: str = "snap.json") -> Path:  # noqa: ANN401 - JSON data
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = corpus_data()
    change(data)
    return data


def _bomb(declared: int) -> dict[str, Any]:
    """A kernel_btf blob of 2 MB of compressed zeros that inflates to 2 GB."""
    compressor = zlib.compressobj(9)
    chunk = bytes(1 << 24)
    packed = b"".join(compressor.compress(chunk) for _ in range(128)) + compressor.flush()
    return {"encoding": "zlib+base64", "size": declared, "data": base64.b64encode(packed).decode()}


@pytest.fixture(scope="module")
def bomb_small() -> dict[str, Any]:
    return _bomb(5_000_000)


BAD_DOCUMENTS: dict[str, tuple[Any, str]] = {
    "empty-object": ({}, "it is not an evspec system snapshot of version 1 (evspec_system = null)"),
    "list": ([1, 2], "it holds a list, not a JSON object"),
    "not-json": ("pmus: msr\n", "is not JSON: Expecting value at line 1 column 1"),
    "empty-file": ("", "is empty"),
    "nested": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "pmus-list": (_with(lambda d: d.update(pmus=["msr"])), "pmus is a list, not an object"),
    "pmu-type": (_with(lambda d: d["pmus"]["msr"].update(type="10")), "pmus.msr.type is a string, not an integer"),
    "pmu-type-negative": (_with(lambda d: d["pmus"]["msr"].update(type=-1)), "pmus.msr.type is -1, not an integer"),
    "pmu-missing-type": (_with(lambda d: d["pmus"]["msr"].pop("type")), "pmus.msr.type is missing"),
    "format": (_with(lambda d: d["pmus"]["msr"]["format"].update(event=7)), "pmus.msr.format.event is a number"),
    "format-text": (_with(lambda d: d["pmus"]["msr"]["format"].update(event="config9:0-3")),
                    "pmus.msr.format.event: format 'event': unknown attr field 'config9'"),
    "alias": (_with(lambda d: d["pmus"]["msr"]["events"].update(tsc=1)), "pmus.msr.events.tsc is a number"),
    "alias-scale": (_with(lambda d: d["pmus"]["msr"]["events"]["tsc"].update(scale=2.5)),
                    "pmus.msr.events.tsc.scale is a number, not a string"),
    "tracefs": (_with(lambda d: d.update(tracefs="yes")), "tracefs is a string, not an object"),
    "tracefs-available": (_with(lambda d: d["tracefs"].update(available="yes")),
                          "tracefs.available is a string, not true or false"),
    "tracefs-help": (_with(lambda d: d["tracefs"].update(help="mount it")), "tracefs.help is not a list of strings"),
    "tracepoint-id": (_with(lambda d: d["tracefs"]["events"]["sched"].update(sched_switch="372")),
                      "tracefs.events.sched.sched_switch is a string, not an integer"),
    "trace-system": (_with(lambda d: d["tracefs"]["events"].update(sched=[1])),
                     "tracefs.events.sched is a list, not an object of event ids"),
    "cpus-type": (_with(lambda d: d.update(cpus=2)), "cpus is a number, not a string"),
    "cpus-huge": (_with(lambda d: d.update(cpus="0-4000000000")), "cpus is \"0-4000000000\", not a CPU list"),
    "cpus-reversed": (_with(lambda d: d.update(cpus="3-1")), "cpus: bad CPU range '3-1'"),
    "features": (_with(lambda d: d["features"].update(kernel_release=6)),
                 "features.kernel_release is a number, not a string"),
    "confine": (_with(lambda d: d.update(confine_files="no")), "confine_files is a string, not true or false"),
    "btf-header": (_with(lambda d: d.update(kernel_btf="eJzs")), "kernel_btf is not zlib+base64 data"),
    "bomb": (_with(lambda d: d.update(kernel_btf=_bomb(2 << 30))), "kernel_btf.size is 2147483648, not an integer "
                                                                    "from 0 to 67108864"),
}


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize("case", sorted(BAD_DOCUMENTS))
def test_a_damaged_snapshot_is_an_error_naming_file_and_field(case: str, command: tuple[str, ...], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    document, problem = BAD_DOCUMENTS[case]
    path = _written(tmp_path, document)
    code, out = run(capsys, *command, "--system", str(path))
    assert code == EXIT_USAGE, out
    assert out.startswith(f"evspec {command[0]}: error: ") and str(path) in out and problem in out, out


def test_a_cut_off_snapshot_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(corpus_data(), indent=1)
    path = _written(tmp_path, text[: len(text) // 2])
    code, out = run(capsys, "check", "-e", "cycles", "--system", str(path))
    assert code == EXIT_USAGE and "is not JSON" in out and "(the file is cut off)" in out, out


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_system_that_is_no_file(command: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run(capsys, *command, "--system", "nosuch.json")
    assert code == EXIT_USAGE
    assert "--system 'nosuch.json': no such file (--system takes live, none or a snapshot file" in out, out
    code, out = run(capsys, *command, "--system", "Live")
    assert code == EXIT_USAGE and "--system 'Live': no such file" in out and "did you mean 'live'?" in out, out
    monkeypatch.setenv("EVSPEC_SYSTEM", "prod")
    code, out = run(capsys, *command)
    assert code == EXIT_USAGE and "$EVSPEC_SYSTEM 'prod': no such file ($EVSPEC_SYSTEM takes live" in out, out
    code, out = run(capsys, *command, "--system", str(tmp_path))
    assert code == EXIT_USAGE and f"cannot read system snapshot '{tmp_path}': it is a directory" in out, out
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, out = run(capsys, *command, "--system", str(fifo))  # no writer: must not block
    assert code == EXIT_USAGE and "it is not a regular file" in out, out
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"{\"evspec_system\": 1, \"cwd\": \"\xff\"}")
    code, out = run(capsys, *command, "--system", str(binary))
    assert code == EXIT_USAGE and "is not UTF-8 text (byte 29)" in out, out


def test_a_snapshot_over_the_size_limit_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _written(tmp_path, corpus_data())
    monkeypatch.setattr(import_module("evspec.system.snapshot"), "MAX_SNAPSHOT_BYTES", 1000)
    with pytest.raises(SnapshotError, match=r"bytes, more than evspec reads \(1000 bytes\)"):
        read_snapshot(path)


def test_a_zlib_bomb_is_refused_within_the_size_it_declares(bomb_small: dict[str, Any]) -> None:
    """A blob that inflates past its declared size stops there: no more memory than it declared."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(SnapshotError, match="kernel_btf is more than the 5000000 bytes it says"):
            decode_btf(bomb_small)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40_000_000  # the compressed text, decoded once, and the 5 MB it may inflate to
    assert decode_btf(encode_btf(b"BTF" * 10)) == b"BTF" * 10
    truncated = encode_btf(bytes(100_000))
    packed = base64.b64decode(truncated["data"])
    truncated["data"] = base64.b64encode(packed[: len(packed) // 2]).decode()
    with pytest.raises(SnapshotError, match="its compressed data is cut off"):
        decode_btf(truncated)


def test_a_zlib_bomb_in_a_checked_snapshot_is_bounded(bomb_small: dict[str, Any], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The blob is inflated only when an object needs it; the commands that do not use it run."""
    path = _written(tmp_path, {**corpus_data(), "kernel_btf": bomb_small})
    code, out = run(capsys, "check", "--system", str(path), "-e", "cpu-clock,sched:sched_switch")
    assert code == 0, out
    with pytest.raises(SnapshotError, match="more than the 5000000 bytes it says"):
        read_snapshot(path).kernel_btf()


def test_sigterm_exits_128_plus_its_number(tmp_path: Path) -> None:
    """A check waiting for its input is stopped by SIGTERM: 143, not SIGINT's 130, and no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "evspec", "check", "-"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write("cycles\n")
    proc.stdin.flush()
    _wait_until_reading(proc.pid)
    proc.send_signal(signal.SIGTERM)
    err = proc.stderr.read()
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    proc = subprocess.Popen([sys.executable, "-m", "evspec", "check", "-"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    _wait_until_reading(proc.pid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 128 + signal.SIGINT


def _wait_until_reading(pid: int) -> None:
    """Until the process blocks in read(0, ...): its Python is up and the handlers are in place."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
        if len(syscall) > 1 and syscall[0] == "0" and int(syscall[1], 16) == 0:
            return
        time.sleep(0.02)
    raise AssertionError("the command never waited for its input")


def test_record_stopped_during_setup_exits_with_that_signal() -> None:
    """record's wake-up pipe holds the signal's number: SIGTERM during set-up is 143."""
    from evspec.cli.record import _stop_signal, _stop_signals

    with _stop_signals([]) as stops:
        assert _stop_signal(stops.fd) is None and stops.count == 0
        os.kill(os.getpid(), signal.SIGTERM)
        assert _stop_signal(stops.fd) == signal.SIGTERM and stops.count == 1
