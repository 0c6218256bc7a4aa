"""The live machine, read lazily from sysfs and tracefs.

Nothing is read before it is asked for: checking ``cycles`` reads no PMU and no tracepoint, an
alias lookup reads the PMU folders, an exact tracepoint reads one ``id`` file, and only a glob lists
trace systems. ``root`` prefixes every path, so tests point it at a fake tree.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from evspec.cpus import parse_cpu_list
from evspec.system.model import (
    TRACEFS_NON_EVENTS,
    TRACEFS_NON_SYSTEMS,
    ExternFacts,
    Features,
    Pmu,
    PmuAlias,
    System,
    TracefsUnavailable,
    parse_format,
)

PMU_DIR = "sys/bus/event_source/devices"
TRACEFS_DIRS = ("sys/kernel/tracing", "sys/kernel/debug/tracing")
ALIAS_SIDE_FILES = (".unit", ".scale", ".per-pkg", ".snapshot")

TRACEFS_HELP = (
    "mount it: 'mount -t tracefs nodev /sys/kernel/tracing' (as root)",
    "or check against a snapshot of a machine that has it: '--system FILE'",
)


class FileReader:
    """The file-system calls LiveSystem makes, in one place (tests count or fake them)."""

    def listdir(self, path: Path) -> list[str]:
        try:
            return os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def read(self, path: Path) -> str | None:
        try:
            return path.read_text()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def exists(self, path: Path) -> bool:
        return path.exists()

    def readable_dir(self, path: Path) -> bool:
        try:  # Path.is_dir() raises PermissionError under a directory the user cannot search
            return path.is_dir() and os.access(path, os.R_OK | os.X_OK)
        except OSError:
            return False

    def denied_dir(self, path: Path) -> str | None:
        """``mode 0700, owner root`` for a directory that is there but that this user may not
        read or search; None for any other."""
        try:
            info = path.stat()
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode) or os.access(path, os.R_OK | os.X_OK):
            return None
        try:
            import pwd

            owner = pwd.getpwuid(info.st_uid).pw_name
        except (ImportError, KeyError):
            owner = str(info.st_uid)
        return f"mode {stat.S_IMODE(info.st_mode):04o}, owner {owner}"


def mount_tracefs(target: Path) -> None:
    """``mount -t tracefs nodev TARGET`` (needs root); raises OSError with mount's message."""
    proc = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", os.fspath(target)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise OSError(proc.stderr.strip() or f"mount exited with status {proc.returncode}")


class LiveSystem(System):
    """This machine (or a fake tree under ``root``).

    ``mount``: called with the tracefs mount point when tracefs is not mounted and we are root; by
    default the real ``mount`` when ``root`` is ``/`` and nothing otherwise. What it did is added
    to ``notes``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = "/",
        *,
        reader: FileReader | None = None,
        mount: Callable[[Path], None] | None = None,
        is_root: bool | None = None,
        cwd: str | None = None,
    ) -> None:
        self.notes = []
        self._root = Path(root)
        self._fs = reader or FileReader()
        self._is_root = os.geteuid() == 0 if is_root is None else is_root
        self._mount = mount if mount is not None else (mount_tracefs if self._root == Path("/") else None)
        self._cwd = cwd if cwd is not None else os.getcwd()
        self._pmu_names: tuple[str, ...] | None = None
        self._pmus: dict[str, Pmu | None] = {}
        self._tracing: Path | None = None
        self._tracing_error: TracefsUnavailable | None = None
        self._systems: tuple[str, ...] | None = None
        self._events: dict[str, tuple[str, ...]] = {}
        self._ids: dict[tuple[str, str], int | None] = {}
        self._cpus: tuple[int, ...] | None = None
        self._features: Features | None = None

    def _path(self, rel: str) -> Path:
        return self._root / rel

    # ---- PMUs

    def pmu_names(self) -> tuple[str, ...]:
        if self._pmu_names is None:
            self._pmu_names = tuple(sorted(self._fs.listdir(self._path(PMU_DIR))))
        return self._pmu_names

    def pmu(self, name: str) -> Pmu | None:
        if name not in self._pmus:
            self._pmus[name] = self._read_pmu(name) if name and "/" not in name else None
        return self._pmus[name]

    def _read_pmu(self, name: str) -> Pmu | None:
        base = self._path(PMU_DIR) / name
        type_text = self._fs.read(base / "type")
        if type_text is None:
            return None
        formats = {}
        for term in sorted(self._fs.listdir(base / "format")):
            text = self._fs.read(base / "format" / term)
            if text is not None:
                formats[term] = parse_format(term, text)
        aliases = {}
        entries = set(self._fs.listdir(base / "events"))
        for entry in sorted(entries):
            if entry.endswith(ALIAS_SIDE_FILES):
                continue
            definition = self._fs.read(base / "events" / entry)
            if definition is None:
                continue

            def side(suffix: str, entry: str = entry) -> str | None:
                if entry + suffix not in entries:
                    return None
                text = self._fs.read(base / "events" / (entry + suffix))
                return text.strip() if text is not None else None

            aliases[entry.lower()] = PmuAlias(
                name=entry,
                definition=definition.strip(),
                unit=side(".unit"),
                scale=side(".scale"),
                per_pkg=(side(".per-pkg") or "0") not in ("", "0"),
                snapshot=(side(".snapshot") or "0") not in ("", "0"),
            )
        cpus = self._fs.read(base / "cpus")
        cpumask = self._fs.read(base / "cpumask")
        return Pmu(
            name,
            int(type_text.strip()),
            formats,
            aliases,
            cpus.strip() if cpus is not None else None,
            cpumask.strip() if cpumask is not None else None,
        )

    # ---- tracefs

    def _tracing_events(self) -> Path:
        """The tracefs ``events`` folder, mounting tracefs first if we may; raises
        TracefsUnavailable when there is none."""
        if self._tracing is not None:
            return self._tracing
        if self._tracing_error is not None:
            raise self._tracing_error
        primary = self._path(TRACEFS_DIRS[0])
        if self._fs.readable_dir(primary / "events"):
            self._tracing = primary / "events"
            return self._tracing
        if self._is_root and self._mount is not None and self._fs.is_dir(primary):
            try:
                self._mount(primary)
            except OSError as exc:
                self.notes.append(f"could not mount tracefs at /{TRACEFS_DIRS[0]}: {exc}")
            else:
                self.notes.append(f"mounted tracefs at /{TRACEFS_DIRS[0]}")
                if self._fs.readable_dir(primary / "events"):
                    self._tracing = primary / "events"
                    return self._tracing
        legacy = self._path(TRACEFS_DIRS[1])
        if self._fs.readable_dir(legacy / "events"):
            self._tracing = legacy / "events"
            return self._tracing
        denied = self._fs.denied_dir(primary)
        if denied is not None:
            where = f"/{TRACEFS_DIRS[0]}"
            self._tracing_error = TracefsUnavailable(
                f"tracefs at {where} cannot be read by this user ({denied}): its tracepoints cannot be "
                "checked, and perf cannot open them either",
                (f"as root, let every user read it: 'mount -o remount,mode=755 {where}' (perf says \"Try 'sudo "
                 f"mount -o remount,mode=755 {where}/'\")",
                 "or run the check as root, or check against a snapshot written by root: '--system FILE'"),
                denied=where,
            )
            raise self._tracing_error
        self._tracing_error = TracefsUnavailable(
            "tracefs not available (no readable events/ under /sys/kernel/tracing or "
            "/sys/kernel/debug/tracing)",
            TRACEFS_HELP,
        )
        raise self._tracing_error

    def tracepoint_systems(self) -> tuple[str, ...]:
        if self._systems is None:
            events = self._tracing_events()
            self._systems = tuple(  # directory order: the order perf walks them in
                s for s in self._fs.listdir(events) if s not in TRACEFS_NON_SYSTEMS and self._fs.is_dir(events / s)
            )
        return self._systems

    def has_tracepoint_system(self, system: str) -> bool:
        if self._systems is not None:
            return system in self._systems
        if not system or "/" in system or system in TRACEFS_NON_SYSTEMS or system.startswith("."):
            return False
        return self._fs.is_dir(self._tracing_events() / system)

    def tracepoint_events(self, system: str) -> tuple[str, ...]:
        if system not in self._events:
            if not self.has_tracepoint_system(system):
                self._events[system] = ()
            else:
                folder = self._tracing_events() / system
                self._events[system] = tuple(
                    e for e in self._fs.listdir(folder) if e not in TRACEFS_NON_EVENTS and self._fs.is_dir(folder / e)
                )
        return self._events[system]

    def tracepoint_id(self, system: str, event: str) -> int | None:
        key = (system, event)
        if key not in self._ids:
            tp_id = None
            if _plain_name(system) and _plain_name(event) and event not in TRACEFS_NON_EVENTS:
                text = self._fs.read(self._tracing_events() / system / event / "id")
                if text is not None and text.strip().isdigit():
                    tp_id = int(text.strip())
            self._ids[key] = tp_id
        return self._ids[key]

    # ---- CPUs, features, files

    def possible_cpus(self) -> tuple[int, ...]:
        if self._cpus is None:
            text = self._fs.read(self._path("sys/devices/system/cpu/possible"))
            self._cpus = parse_cpu_list(text) if text else (0,)
        return self._cpus

    def features(self) -> Features:
        if self._features is None:
            try:
                events = self._tracing_events()
                tracing = events.parent
                kprobes = self._fs.exists(tracing / "kprobe_events")
                uprobes = self._fs.exists(tracing / "uprobe_events")
            except TracefsUnavailable:
                kprobes = uprobes = False
            release = self._fs.read(self._path("proc/sys/kernel/osrelease"))
            if release is None and self._root == Path("/"):
                release = os.uname().release
            self._features = Features(
                kernel_release=(release or "").strip(),
                kprobe_events=kprobes,
                uprobe_events=uprobes,
                btf_vmlinux=self._fs.exists(self._path("sys/kernel/btf/vmlinux")),
            )
        return self._features

    @property
    def cwd(self) -> str:
        return self._cwd

    def file_exists(self, path: str) -> bool:
        return os.path.isfile(os.path.join(self._cwd, path))

    # ---- what BPF externs are resolved against

    def extern_facts(self, *, kconfig: bool = True, kallsyms: bool = True) -> ExternFacts:
        """Read as libbpf reads them when it loads an object (``uname``, the Kconfig files
        ``kconfig.read_kconfig`` looks in, ``/proc/kallsyms``, ``/proc/version_signature``); under a
        fake ``root`` the names ``uname`` gives come from ``proc/sys/kernel/{osrelease,version,arch}``."""
        from evspec.loader.externs import kconfig as kc  # the BPF side: only for objects with externs

        if self._root == Path("/"):
            uname = os.uname()
            release, version, machine = uname.release, uname.version, uname.machine
        else:
            release, version, machine = ((self._fs.read(self._path(f"proc/sys/kernel/{name}")) or "").strip()
                                         for name in ("osrelease", "version", "arch"))
        config: tuple[dict[str, str], str] | None = None
        tried: tuple[tuple[str, str], ...] = ()
        invalid = None
        if kconfig:
            try:
                config = kc.read_kconfig(release, [self._path(f"boot/config-{release}"), self._path("proc/config.gz")])
            except kc.KconfigUnreadable as exc:
                tried = exc.tried
            except kc.KconfigError as exc:
                invalid = str(exc)
        names: tuple[tuple[str, str], ...] | None = None
        ambiguous: dict[str, int] | None = None
        unreadable = "not read"
        if kallsyms:
            try:
                names, ambiguous = read_kallsyms_names(self._path("proc/kallsyms"))
            except OSError as exc:
                unreadable = exc.strerror or str(exc)
        btf_dir = self._path("sys/kernel/btf")
        modules = (tuple(sorted(name for name in self._fs.listdir(btf_dir) if name != "vmlinux"))
                   if self._fs.exists(btf_dir / "vmlinux") else None)
        return ExternFacts(
            release=release, version=version, machine=machine,
            version_signature=kc.read_version_signature(self._path("proc/version_signature")),
            kconfig=config, kconfig_unreadable=tried, kconfig_invalid=invalid,
            kallsyms=names, kallsyms_unreadable=unreadable, ambiguous=ambiguous, module_btfs=modules,
            kprobes=self.features().kprobe_events)


def read_kallsyms_names(path: Path) -> tuple[tuple[tuple[str, str], ...], dict[str, int] | None]:
    """The (type letter, name) of each line of a kallsyms file, and the names it lists at two
    addresses or more (a data symbol's ``.llvm.N`` suffix dropped, as libbpf matches ksyms) with
    how many; None for those when every address is 0 (hidden from this user: kptr_restrict)."""
    from evspec.loader.externs.resolve import kallsyms_base_name

    names: list[tuple[str, str]] = []
    addresses: dict[str, set[str]] = {}
    seen_address = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            address, letter, name = parts[:3]
            names.append((letter, name))
            seen_address = seen_address or address.strip("0") != ""
            addresses.setdefault(kallsyms_base_name(letter, name), set()).add(address)
    if not seen_address:
        return tuple(names), None
    return tuple(names), {name: len(found) for name, found in addresses.items() if len(found) > 1}


def _plain_name(part: str) -> bool:
    return bool(part) and "/" not in part and part not in (".", "..")
