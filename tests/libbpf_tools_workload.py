"""The scripted workload the libbpf-tools references are recorded with (tests/libbpf_tools_refs.py).

    python3 libbpf_tools_workload.py STEP...

It names itself ``evspec-wl`` (the comm tools print and filter on), prepares what its steps need
(a listening socket on 127.0.0.1 for ``tcp``), prints one JSON line ``{"pid", "port"}`` and waits
for a line on stdin, so that a tool can be started with its pid and port before anything happens.
Then it runs the steps in order and prints one JSON line ``{"children": [...], "threads": [...]}``:
the pids of the processes it forked and the tids of the threads it started, in order, so that a
reference can name them by role; it cleans up and exits at the next line or end of stdin (after
the tool has stopped). Every step does the same thing on every run.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import pty
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

COMM = b"evspec-wl"
EXEC_COMM = "evspecwl-exec"  # the comm of what the ``exec`` step runs (a symlink's name)
MISSING = "/nonexistent/evspec-wl"
PR_SET_NAME = 15
CLONE_NEWNS = 0x20000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
MALLOC_SIZES = (40961, 40961, 81923)  # odd sizes no allocator rounds to, for memleak's -z/-Z filter
STEPS = ("exec", "exit", "signal", "open", "stat", "sync", "sleep", "spin", "blockio", "tcp", "mount", "malloc",
         "getaddrinfo", "futex", "readline", "syscalls")

libc = ctypes.CDLL(None, use_errno=True)


class Workload:
    def __init__(self, steps: list[str]) -> None:
        self.steps = steps
        self.children: list[int] = []
        self.threads: list[int] = []
        self.dir = Path(tempfile.mkdtemp(prefix="evspec-wl-"))
        self.listener: socket.socket | None = None
        self.kept: list[int] = []  # allocations memleak must find outstanding

    def prepare(self) -> dict[str, int]:
        libc.prctl(PR_SET_NAME, COMM, 0, 0, 0)
        port = 0
        if "tcp" in self.steps:
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.bind(("127.0.0.1", 0))
            self.listener.listen(1)
            port = self.listener.getsockname()[1]
        return {"pid": os.getpid(), "port": port}

    def fork(self, child: Callable[[], None]) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                child()
            finally:
                os._exit(0)
        self.children.append(pid)
        return pid

    # --- the steps ------------------------------------------------------------------------------

    def exec(self) -> None:
        link = self.dir / EXEC_COMM
        link.symlink_to("/bin/true")
        for argv in ([EXEC_COMM, "--first"], [EXEC_COMM, "--second", "two words"]):
            pid = self.fork(lambda argv=argv: os.execv(link, argv))
            os.waitpid(pid, 0)
        pid = self.fork(lambda: os.execv(MISSING, [MISSING]))  # fails: ENOENT, the child exits 0
        os.waitpid(pid, 0)

    def exit(self) -> None:
        pid = self.fork(lambda: os._exit(3))
        os.waitpid(pid, 0)
        pid = self.fork(lambda: time.sleep(10))
        time.sleep(0.05)
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)

    def signal(self) -> None:
        pid = self.fork(lambda: time.sleep(10))
        time.sleep(0.05)
        os.kill(pid, 0)
        os.kill(pid, signal.SIGUSR1)  # the default action ends it
        os.waitpid(pid, 0)
        try:
            os.kill(pid, signal.SIGUSR2)  # reaped: ESRCH
        except ProcessLookupError:
            pass

    def open(self) -> None:
        os.close(os.open("/etc/hostname", os.O_RDONLY))
        try:
            os.open(MISSING, os.O_RDONLY)
        except FileNotFoundError:
            pass

    def stat(self) -> None:
        os.stat("/etc/hostname")
        try:
            os.stat(MISSING)
        except FileNotFoundError:
            pass

    def sync(self) -> None:
        fd = os.open(self.dir / "synced", os.O_RDWR | os.O_CREAT, 0o600)
        os.write(fd, b"evspec")
        os.fsync(fd)
        os.fdatasync(fd)
        libc.syncfs(fd)
        os.close(fd)
        os.sync()

    def sleep(self) -> None:
        for _ in range(5):
            time.sleep(0.02)

    def spin(self) -> None:
        end = time.monotonic() + 0.4
        while time.monotonic() < end:
            pass

    def blockio(self) -> None:
        """1 MiB written and read back with O_DIRECT, so that the block layer sees this process."""
        size = 1 << 20
        buf = mmap.mmap(-1, size)
        buf.write(b"e" * size)
        path = self.dir / "blocks"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
        try:
            for offset in range(0, size, 1 << 16):
                os.pwritev(fd, [memoryview(buf)[offset:offset + (1 << 16)]], offset)
            os.fsync(fd)
            for offset in range(0, size, 1 << 16):
                os.preadv(fd, [memoryview(buf)[offset:offset + (1 << 16)]], offset)
        finally:
            os.close(fd)

    def tcp(self) -> None:
        assert self.listener is not None
        port = self.listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        server, _ = self.listener.accept()
        client.sendall(b"x" * 4096)
        got = 0
        while got < 4096:
            got += len(server.recv(65536))
        server.sendall(b"y" * 2048)
        got = 0
        while got < 2048:
            got += len(client.recv(65536))
        client.close()
        server.close()
        self.listener.close()

    def mount(self) -> None:
        """A tmpfs mounted and unmounted in a mount namespace of a child's own."""
        target = self.dir / "mnt"
        target.mkdir()

        def child() -> None:
            if libc.unshare(CLONE_NEWNS) != 0:
                os._exit(1)
            libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
            libc.mount(b"evspec-wl", bytes(target), b"tmpfs", 0, b"size=1m")
            libc.umount2(bytes(target), 0)

        os.waitpid(self.fork(child), 0)

    def malloc(self) -> None:
        libc.malloc.restype = ctypes.c_void_p
        for size in MALLOC_SIZES:
            self.kept.append(libc.malloc(size))

    def getaddrinfo(self) -> None:
        socket.getaddrinfo("localhost", None)

    def futex(self) -> None:
        """Two threads wait for a pthread mutex (FUTEX_WAIT) the main thread holds for 50 ms at a
        time (ctypes calls run without the GIL)."""
        mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER

        def waiter() -> None:
            self.threads.append(threading.get_native_id())
            for _ in range(3):
                libc.pthread_mutex_lock(mutex)
                libc.pthread_mutex_unlock(mutex)

        libc.pthread_mutex_lock(mutex)
        started = [threading.Thread(target=waiter) for _ in range(2)]
        for t in started:
            t.start()
        for _ in range(3):
            time.sleep(0.05)
            libc.pthread_mutex_unlock(mutex)
            time.sleep(0.001)
            libc.pthread_mutex_lock(mutex)
        libc.pthread_mutex_unlock(mutex)
        for t in started:
            t.join()

    def readline(self) -> None:
        """A line typed into an interactive bash (on a pseudo-terminal), which reads it with readline."""
        pid, fd = pty.fork()
        if pid == 0:
            os.execv("/bin/bash", ["bash", "--norc", "--noprofile", "-i"])
        self.children.append(pid)
        os.write(fd, b"echo evspec-readline\nexit\n")
        try:
            while os.read(fd, 4096):
                pass
        except OSError:  # EIO: the terminal's other end is closed
            pass
        os.waitpid(pid, 0)
        os.close(fd)

    def syscalls(self) -> None:
        for _ in range(100):
            os.getppid()


def main(argv: list[str]) -> int:
    unknown = [s for s in argv if s not in STEPS]
    if unknown:
        print(f"unknown step(s) {', '.join(unknown)}; the steps are {', '.join(STEPS)}", file=sys.stderr)
        return 2
    work = Workload(argv)
    try:
        print(json.dumps(work.prepare()), flush=True)
        if not sys.stdin.readline():
            return 1
        for step in argv:
            getattr(work, step)()
        print(json.dumps({"children": work.children, "threads": work.threads}), flush=True)
        sys.stdin.readline()  # the tool has stopped: what follows is nobody's record
    finally:
        shutil.rmtree(work.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
