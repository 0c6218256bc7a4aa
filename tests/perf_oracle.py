"""Running a real perf release on event strings, and the answers it gave, committed as test data.

A string's verdict is perf's own: rejected when perf exits 129 after its "Run 'perf list'" line
(what ``parse_events_option`` prints when the ``-e`` callback fails). ``record`` runs ``perf record
--dry-run -e S -- true``. ``stat`` runs ``perf stat -e S --evspec-stop -- true``: perf parses its
options in order, so the ``-e`` callback has decided (and printed) everything before the unknown
option stops perf with its own usage error; without it an accepted ``syscalls:*`` would open ~700
counters (34 s). tests/test_dialect_answers.py checks on a sample that both commands print the same.

perf runs in an empty temporary folder with COLUMNS=80 and LINES=24, stdout not a terminal, two at
a time. ``Answer.stderr`` keeps what perf printed up to its "Run 'perf list'" line, that line
included; the usage block after it is the same for every string of a mode and is not stored.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

RELEASES = ("6.12", "7.2", "7.3")
MODES = ("record", "stat")
ANSWERS = Path(__file__).resolve().parent / "data" / "dialect"
RUN_PERF_LIST = "Run 'perf list' for a list of valid events\n"
STOP_OPTION = "--evspec-stop"
ENV = {"COLUMNS": "80", "LINES": "24", "LC_ALL": "C", "PERF_PAGER": "cat", "PAGER": "cat"}


@dataclass(frozen=True, slots=True)
class Answer:
    mode: str
    text: str
    rejected: bool
    stderr: str  # up to and including "Run 'perf list'..." when rejected; what parsing printed otherwise
    stdout: str  # what perf's lexer echoed (flex's default rule)


def direct(wrapper: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment a ``#!/bin/sh`` wrapper of scripts/oracles.sh execs (``[VAR=...]
    exec CMD ... "$@"``), so that no shell starts per string (a third of each run); anything else
    is run as it is."""
    try:
        lines = Path(wrapper).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return [wrapper], {}
    if len(lines) != 2 or lines[0] != "#!/bin/sh" or not lines[1].endswith(' "$@"'):
        return [wrapper], {}
    words = shlex.split(lines[1][: -len(' "$@"')])
    env: dict[str, str] = {}
    while words and "=" in words[0] and not words[0].startswith("/"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value.replace("${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}", "")
    if not words or words[0] != "exec" or any("$" in w for w in words):
        return [wrapper], {}
    return words[1:], env


def argv(perf: list[str], mode: str, text: str) -> list[str]:
    if mode == "record":
        return [*perf, "record", "--dry-run", "-e", text, "--", "true"]
    return [*perf, "stat", "-e", text, STOP_OPTION, "--", "true"]


def _trim(stderr: str, mode: str) -> tuple[bool, str]:
    """(rejected, the part of stderr parsing produced)."""
    cut = stderr.find(RUN_PERF_LIST)
    if cut >= 0:
        return True, stderr[: cut + len(RUN_PERF_LIST)]
    if mode == "stat":  # drop perf's complaint about the stop option and its usage block
        stop = stderr.find(f"  Error: unknown option `{STOP_OPTION[2:]}'")
        return False, stderr[:stop] if stop >= 0 else stderr
    return False, stderr


def run(perf: str, mode: str, text: str, cwd: str) -> Answer:
    command, extra = direct(perf)
    env = {**os.environ, **ENV, **extra}
    proc = subprocess.run(argv(command, mode, text), cwd=cwd, env=env, capture_output=True, timeout=120)
    stderr = proc.stderr.decode(errors="surrogateescape")
    stdout = proc.stdout.decode(errors="surrogateescape")
    rejected, kept = _trim(stderr, mode)
    if rejected and proc.returncode != 129:
        raise RuntimeError(f"{perf} {mode} -e {text!r}: 'Run perf list' printed but exit {proc.returncode}")
    return Answer(mode, text, rejected, kept, stdout)


def run_all(perf: str, jobs: Sequence[tuple[str, str]], workers: int = 2) -> list[Answer]:
    """Answers for (mode, text) jobs, in order, ``workers`` perf processes at a time."""
    with tempfile.TemporaryDirectory(prefix="evspec-oracle-") as cwd:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda job: run(perf, job[0], job[1], cwd), jobs))


def answers_path(release: str) -> Path:
    return ANSWERS / f"perf-{release}.jsonl.gz"


def write_answers(release: str, version_line: str, answers: Iterable[Answer]) -> None:
    ANSWERS.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"perf": version_line})]
    for a in answers:
        rec: dict[str, object] = {"mode": a.mode, "text": a.text, "rejected": a.rejected}
        if a.stderr:
            rec["stderr"] = a.stderr
        if a.stdout:
            rec["stdout"] = a.stdout
        lines.append(json.dumps(rec, ensure_ascii=False))
    data = ("\n".join(lines) + "\n").encode(errors="surrogateescape")
    with gzip.GzipFile(answers_path(release), "wb", mtime=0) as f:  # mtime 0: the same bytes every run
        f.write(data)


def read_answers(release: str) -> tuple[str, list[Answer]]:
    """(the ``perf --version`` line of the binary that answered, its answers)."""
    with gzip.open(answers_path(release), "rb") as f:
        lines = f.read().decode(errors="surrogateescape").splitlines()
    head = json.loads(lines[0])["perf"]
    out = []
    for line in lines[1:]:
        rec = json.loads(line)
        out.append(Answer(rec["mode"], rec["text"], rec["rejected"], rec.get("stderr", ""), rec.get("stdout", "")))
    return head, out


def strings() -> list[str]:
    """What the answers are about: the corpus strings, then the generated ones (each once)."""
    from corpus_files import read_corpus
    from dialect_strings import read_generated

    return list(dict.fromkeys([r.string for r in read_corpus()] + read_generated()))


def jobs(texts: Sequence[str]) -> list[tuple[str, str]]:
    return [(mode, t) for t in texts for mode in MODES]


def same_stderr(predicted: str, actual: str, quirk: str | None) -> bool:
    """Equal, but where perf prints an unterminated window (the prediction's quirk says so): there
    perf's window line goes on with whatever followed in its memory."""
    if predicted == actual:
        return True
    if quirk is None or "unterminated" not in quirk:
        return False
    want, got = predicted.split("\n"), actual.split("\n")
    if len(want) != len(got):
        return False
    for a, b in zip(want, got, strict=True):
        if a != b and not (a.startswith("event syntax error: '") and b.startswith(a[:-1]) and b.endswith("'")):
            return False
    return True


# what perf record says about accepted events after parsing them (evlist checks the emulation of
# the parser leaves out): an accepted string's stderr is the prediction's, then lines of these
AFTER_PARSING = ("Events with aux-action must have AUX area event group leader", "No AUX area event to sample",
                 "Bad aux-action '", "aux-action '")  # fmt: skip


def _after_parsing(rest: str) -> bool:
    return all(line.startswith(AFTER_PARSING) for line in rest.split("\n") if line)


def differences(release: str, answers: Iterable[Answer], system: object, limit: int = 40) -> list[str]:
    """Where ``predict(..., release)`` on ``system`` differs from what perf answered: the verdict
    of every string, the stderr of every rejection, what an acceptance printed while parsing
    (warnings; not what record checks after parsing, AFTER_PARSING), the characters echoed to
    stdout."""
    from evspec.dialect import predict

    out: list[str] = []
    for a in answers:
        v = predict(a.text, release, system=system, mode=a.mode, term_width=int(ENV["COLUMNS"]))  # type: ignore[arg-type]
        said = v.stderr
        cut = said.find(RUN_PERF_LIST)
        said = said[: cut + len(RUN_PERF_LIST)] if cut >= 0 else said
        if v.accepted == a.rejected:
            problem = f"perf {'rejects' if a.rejected else 'accepts'}, predicted the opposite"
        elif a.rejected and not same_stderr(said, a.stderr, v.quirk):
            problem = f"stderr differs:\n--- perf\n{a.stderr}--- predicted\n{said}"
        elif not a.rejected and not (a.stderr.startswith(said) and _after_parsing(a.stderr[len(said):])):
            problem = f"stderr differs:\n--- perf\n{a.stderr}--- predicted\n{said}"
        elif v.stdout != a.stdout:
            problem = f"stdout differs: perf {a.stdout!r}, predicted {v.stdout!r}"
        else:
            continue
        out.append(f"perf {release} {a.mode} -e {a.text!r}: {problem}")
        if len(out) >= limit:
            break
    return out
