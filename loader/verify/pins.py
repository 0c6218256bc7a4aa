"""Where ``evspec verify`` pins maps declared ``LIBBPF_PIN_BY_NAME``, and that nothing stays there.

Each run pins into a fresh directory named after its owner, ``evspec-verify-PID_START_PIDNS-XXXX``
(the process id, its start time in clock ticks, its pid namespace: ``Owner`` of the tracefs
entries of ``record``): on ``/sys/fs/bpf`` when a BPF filesystem is mounted there, else on a
private bpffs mount in the temporary directory (``evspec-verify-bpffs-OWNER-XXXX``). The directory
is removed with what was pinned in it when verify ends, also on SIGTERM or SIGHUP: ``stop_signals``
turns them into an exception, and the directory is made and removed with them blocked, so that
neither half-happens. A run killed with SIGKILL leaves its directory behind: ``sweep_stale`` (at
the start of every verify) removes the directories of owners that are gone, never a live run's
(nor one of another pid namespace, whose pids mean nothing here).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from evspec.loader.attach.probe_events import Owner

BPFFS = "/sys/fs/bpf"
PREFIX = "evspec-verify-"
PRIVATE_PREFIX = "evspec-verify-bpffs-"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_OWNED = re.compile(r"evspec-verify-(?:bpffs-)?(\d+)_(\d+)(?:_(\d+))?-[^/]+\Z")


class Terminated(BaseException):
    """A stop signal arrived (a BaseException, like KeyboardInterrupt: nothing on the way catches
    it, every ``finally`` runs)."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


@contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Terminated`` (the first one; later ones are ignored while the
    run cleans up), for as long as the block runs."""

    def handler(signo: int, _frame: object) -> None:
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signo)

    old = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def _signals_blocked() -> Iterator[None]:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def owner_tag() -> str:
    """``PID_START_PIDNS`` of this process (``PID_START`` when its pid namespace cannot be read)."""
    from evspec.loader.attach.probe_events import Owner  # dataclasses: imported only when pinning

    me = Owner.of(os.getpid())
    if me is None:  # /proc is not mounted: nothing could tell this run's directory from a stale one
        return f"{os.getpid()}_0"
    return f"{me.pid}_{me.start}" + (f"_{me.pidns}" if me.pidns is not None else "")


def owner_of(name: str) -> Owner | None:
    """The process a verify directory ``name`` belongs to (None: not one of verify's)."""
    m = _OWNED.match(name)
    if m is None:
        return None
    from evspec.loader.attach.probe_events import Owner

    return Owner(int(m[1]), int(m[2]), int(m[3]) if m[3] else None)


@contextmanager
def pin_root(on_bpffs: bool) -> Iterator[str]:
    """A fresh directory for pins, removed again with what was pinned in it, whatever ends the
    block (``Terminated`` included): on /sys/fs/bpf when ``on_bpffs``, else a private bpffs mount."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    root: str | None = None
    mounted = False
    try:
        if on_bpffs:
            root = tempfile.mkdtemp(prefix=f"{PREFIX}{owner_tag()}-", dir=BPFFS)
        else:
            root = tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{owner_tag()}-")
            subprocess.run(["mount", "-t", "bpf", "bpf", root], check=True, capture_output=True)
            mounted = True
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a stop signal pending now raises in here
        yield root
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            if root is not None:
                remove_pin_root(root, mounted)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def remove_pin_root(root: str, mounted: bool) -> list[str]:
    """Remove ``root``: a mount of its own is unmounted (its pins go with it: the bpffs is private),
    a directory on /sys/fs/bpf emptied of its pins. Returns what could not be removed, in words."""
    problems = []
    if mounted:
        proc = subprocess.run(["umount", root], check=False, capture_output=True, text=True)
        if proc.returncode != 0:
            return [f"cannot unmount {root}: {proc.stderr.strip() or f'umount exit {proc.returncode}'}"]
    else:
        for name in os.listdir(root):
            try:
                os.unlink(os.path.join(root, name))
            except OSError as exc:
                problems.append(f"cannot remove the pin {os.path.join(root, name)}: {exc.strerror or exc}")
    try:
        os.rmdir(root)
    except OSError as exc:
        problems.append(f"cannot remove {root}: {exc.strerror or exc}")
    return problems


def sweep_stale(bpffs: str = BPFFS, tmp: str | None = None) -> tuple[list[str], list[str]]:
    """Remove the pin directories (and private bpffs mounts) that verify runs which are gone left
    behind (a SIGKILL): (what was removed, what could not be, in words)."""
    removed: list[str] = []
    problems: list[str] = []
    places = [(bpffs, PREFIX, False), (tmp if tmp is not None else tempfile.gettempdir(), PRIVATE_PREFIX, True)]
    for parent, prefix, private in places:
        try:
            names = [n for n in os.listdir(parent) if n.startswith(prefix)]
        except OSError:
            continue
        for name in names:
            owner = owner_of(name)
            if owner is None or owner.alive():
                continue
            path = os.path.join(parent, name)
            with _signals_blocked():
                trouble = remove_pin_root(path, private and os.path.ismount(path))
            if trouble:
                problems.extend(f"{t} (left by verify process {owner.pid}, which is gone)" for t in trouble)
            else:
                removed.append(f"{path} (left by verify process {owner.pid}, which is gone)")
    return removed, problems
