"""A fake tracefs for tests: a directory laid out like tracefs, whose probe files react to writes
the way the kernel does.

``FakeTracefs.create(root, kinds)`` makes ``root/events/`` and an empty ``uprobe_events`` and/or
``kprobe_events``. ``FakeTracefs`` is the ``TracefsWriter`` for it: a definition line appends
the kernel's listing of it to the file and creates ``events/GROUP/EVENT/id``; ``-:GROUP/EVENT``
removes both. It refuses what the kernel refuses, with the same errno: a malformed line or name
(EINVAL), an existing event (EEXIST), a missing file or unknown kernel symbol (ENOENT), removing a
missing event (ENOENT) or one in use (EBUSY, see ``busy``); ``fail(prefix, errno)`` scripts a
failure for the next line that starts with ``prefix``. Every line written is kept in ``writes``.
"""

from __future__ import annotations

import errno as E
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evspec.loader.attach.probe_events import ProbeKind, Tracefs

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_DEFINE = re.compile(r"([pr]):([^/\s]+)/(\S+) (\S+)\Z")
_REMOVE = re.compile(r"-:([^/\s]+)/(\S+)\Z")
_UPROBE_TARGET = re.compile(r"(/\S+):0x([0-9a-fA-F]+)\Z")
_KPROBE_TARGET = re.compile(r"(?:(\w+):)?(\w+)(?:\+(\d+))?\Z|0x[0-9a-fA-F]+\Z")


def _oserror(err: int, path: Path) -> OSError:
    return OSError(err, E.errorcode.get(err, str(err)), str(path))


@dataclass
class FakeTracefs:
    root: Path
    kernel_symbols: frozenset[str] | None = None  # kprobe targets that exist (None: any)
    busy: set[str] = field(default_factory=set)  # GROUP/EVENT that cannot be removed (in use)
    writes: list[str] = field(default_factory=list)
    _failures: list[tuple[str, int]] = field(default_factory=list)
    _next_id: int = 2000

    @staticmethod
    def create(root: Path, kinds: Iterable[ProbeKind] = tuple(ProbeKind), **kw: object) -> FakeTracefs:
        (root / "events").mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            (root / kind.events_file).touch()
        return FakeTracefs(root, **kw)  # type: ignore[arg-type]

    @property
    def tracefs(self) -> Tracefs:
        return Tracefs(self.root, self)

    def fail(self, prefix: str, err: int) -> None:
        self._failures.append((prefix, err))

    def lines(self, kind: ProbeKind) -> list[str]:
        return (self.root / kind.events_file).read_text().splitlines()

    def append(self, path: Path, line: str) -> None:
        if not path.exists():
            raise _oserror(E.ENOENT, path)
        self.writes.append(line)
        for i, (prefix, err) in enumerate(self._failures):
            if line.startswith(prefix):
                del self._failures[i]
                raise _oserror(err, path)
        kind = ProbeKind.UPROBE if path.name == ProbeKind.UPROBE.events_file else ProbeKind.KPROBE
        if (m := _REMOVE.match(line)) is not None:
            self._remove(path, m.group(1), m.group(2))
        elif (m := _DEFINE.match(line)) is not None:
            self._define(path, kind, m.group(1), m.group(2), m.group(3), m.group(4))
        else:
            raise _oserror(E.EINVAL, path)

    def _event_dir(self, group: str, event: str) -> Path:
        return self.root / "events" / group / event

    def _define(self, path: Path, kind: ProbeKind, how: str, group: str, event: str, target: str) -> None:
        if not (_NAME.match(group) and _NAME.match(event)):
            raise _oserror(E.EINVAL, path)
        if self._event_dir(group, event).exists():
            raise _oserror(E.EEXIST, path)
        if kind is ProbeKind.UPROBE:
            m = _UPROBE_TARGET.match(target)
            if m is None:
                raise _oserror(E.EINVAL, path)
            if not Path(m.group(1)).exists():
                raise _oserror(E.ENOENT, path)
            listed = f"{how}:{group}/{event} {m.group(1)}:0x{int(m.group(2), 16):016x}"
        else:
            m = _KPROBE_TARGET.match(target)
            if m is None:
                raise _oserror(E.EINVAL, path)
            if how == "r" and m.group(3):
                raise _oserror(E.EINVAL, path)  # a return probe takes no offset
            if self.kernel_symbols is not None and m.group(2) and m.group(2) not in self.kernel_symbols:
                raise _oserror(E.ENOENT, path)
            listed = f"{how}:{group}/{event} {target}"
        with path.open("a") as f:
            f.write(listed + "\n")
        directory = self._event_dir(group, event)
        directory.mkdir(parents=True)
        (directory / "id").write_text(f"{self._next_id}\n")
        self._next_id += 1

    def _remove(self, path: Path, group: str, event: str) -> None:
        directory = self._event_dir(group, event)
        if not directory.exists():
            raise _oserror(E.ENOENT, path)
        if f"{group}/{event}" in self.busy:
            raise _oserror(E.EBUSY, path)
        kept = [ln for ln in path.read_text().splitlines() if not re.match(rf"[pr]:{group}/{event} ", ln)]
        path.write_text("".join(f"{ln}\n" for ln in kept))
        (directory / "id").unlink()
        directory.rmdir()
        if not any(directory.parent.iterdir()):
            directory.parent.rmdir()
