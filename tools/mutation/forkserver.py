"""A process that imports pytest, hypothesis and the third-party libraries once, then forks one
child per mutant run: a run then costs evspec's own imports and the tests, not 2-3 s of start-up.

Requests come as JSON lines on stdin ({"args", "env", "output", "timeout"}); each answer is one JSON
line {"code": pytest's exit status, or null after a timeout}. A child runs in a session of its own,
so that a timeout ends the tests' subprocesses with it. Nothing of evspec is imported here: the child
imports it, with the mutant served by sitecustomize.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest

for _name in (
    "_hypothesis_pytestplugin",
    "hypothesis",
    "hypothesis.strategies",
    "elftools.elf.elffile",
    "lark",
):
    try:
        __import__(_name)
    except ImportError:
        pass


def _child(request: dict) -> None:
    os.setsid()
    fd = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    import sitecustomize

    sitecustomize._install()
    code = pytest.main(request["args"])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code))


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                _child(request)
            finally:
                os._exit(70)
        print(json.dumps({"code": _wait(pid, request["timeout"])}), flush=True)


if __name__ == "__main__":
    serve()
