"""A fake ``Funnel`` for unit tests: records every call with decoded arguments, simulates a little.

``FakeKernel`` keeps maps (their contents, frozen state), programs and descriptors the way the
kernel would, so the typed layer and the live-object builder run unchanged on top of it. Failures
are scripted per operation (``script("BPF_PROG_LOAD", errno=EACCES, log=...)``) or come from the
simulated limits: missing capabilities, an RLIMIT_MEMLOCK the kernel charges, a kernel that knows
shorter attribute structures (E2BIG), a verifier log buffer that is too small (ENOSPC).
"""

from __future__ import annotations

import ctypes
import errno as E
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.abi.perf import Ioctl, PerfEventAttr
from evspec.loader.abi.perf_bits import AttrFlag
from evspec.loader.kernel.btf_objects import BtfInfo
from evspec.loader.kernel.syscalls import (
    CAP_BPF,
    CAP_PERFMON,
    CAP_SYS_ADMIN,
    PERF_FLAG_FD_CLOEXEC,
    RLIM_INFINITY,
    SyscallError,
)
from evspec.loader.object.spec import MapType

from evspec.span import Slotted, value_field

ALL_CAPABILITIES = (1 << 41) - 1
_MEMLOCK_CHARGED = ("BPF_MAP_CREATE", "BPF_PROG_LOAD", "BPF_BTF_LOAD")
_ARRAYS = (MapType.ARRAY, MapType.PERCPU_ARRAY, MapType.PERF_EVENT_ARRAY, MapType.PROG_ARRAY)


class Call(Slotted):
    """One call the code under test made: its operation, decoded arguments and outcome."""

    op: str  # "BPF_MAP_CREATE", "perf_event_open", "PERF_EVENT_IOC_SET_BPF", "mmap", "close", …
    args: Mapping[str, Any]
    result: int | None = None
    errno: int | None = None


class Script(Slotted, frozen=False):
    """A scripted outcome for the next matching call(s) of ``op``."""

    op: str
    errno: int | None = None
    result: int | None = None
    log: str | None = None  # PROG_LOAD / BTF_LOAD: the log written when a log buffer is given
    report_true_size: bool = True  # write log_true_size, as kernels >= 6.4 do
    times: int | None = 1  # None: every matching call
    match: Callable[[Mapping[str, Any]], bool] | None = None


class FakeMap(Slotted, frozen=False):
    type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int
    name: str
    id: int
    data: dict[bytes, bytes] = value_field(default_factory=dict)
    frozen: bool = False


def _decode_struct(attr: ctypes.Structure, size: int) -> dict[str, Any]:
    out: dict[str, Any] = {"size": size}
    for name, *_ in attr._fields_:  # type: ignore[misc]
        if name.startswith("_"):
            continue
        value = getattr(attr, name)
        if isinstance(value, bytes):
            value = value.decode("ascii", "replace")
        elif isinstance(value, ctypes.Array):
            value = bytes(value)
        out[name] = value
    return out


def _read(address: int, length: int) -> bytes:
    return ctypes.string_at(address, length) if address and length else b""


class FakeKernel:
    """A scripted stand-in for ``LinuxFunnel``."""

    def __init__(
        self,
        *,
        capabilities: int = ALL_CAPABILITIES,
        memlock: tuple[int, int] = (RLIM_INFINITY, RLIM_INFINITY),
        memlock_charged: bool = False,
        bpf_attr_size: int | None = None,
        perf_attr_size: int | None = None,
        first_fd: int = 100,
        btf_objects: Mapping[int, tuple[str, bool, bytes]] | None = None,
    ) -> None:
        self.capabilities = capabilities
        self.memlock = memlock
        self.memlock_charged = memlock_charged  # kernels < 5.11 count BPF memory against the limit
        self.bpf_attr_size = bpf_attr_size  # the union bpf_attr size this "kernel" knows
        self.perf_attr_size = perf_attr_size  # the perf_event_attr size this "kernel" knows
        self.calls: list[Call] = []
        self.raw_tracepoints: list[str] = []  # the names BPF_RAW_TRACEPOINT_OPEN attached to
        self.scripts: list[Script] = []
        self.open_fds: dict[int, str] = {}  # fd -> what it is ("map", "prog", "btf", "perf", "link")
        self.maps: dict[int, FakeMap] = {}
        self.programs: dict[int, dict[str, Any]] = {}
        self.mappings: dict[int, ctypes.Array] = {}  # type: ignore[type-arg]
        # the kernel's BTF objects by id: (name, the kernel's own, bytes); and fds open on them
        self.btf_objects: dict[int, tuple[str, bool, bytes]] = dict(btf_objects or {})
        self.btf_fds: dict[int, int] = {}
        self.btf_gone: set[int] = set()  # ids still listed, but unloaded before BTF_GET_FD_BY_ID
        self._next_fd = first_fd
        self._next_id = 1

    # ------------------------------------------------------------- scripting

    def script(self, op: str, **kw: Any) -> Script:
        s = Script(op, **kw)
        self.scripts.append(s)
        return s

    def calls_of(self, op: str) -> list[Call]:
        return [c for c in self.calls if c.op == op]

    def _scripted(self, op: str, args: Mapping[str, Any]) -> Script | None:
        for s in self.scripts:
            if s.op == op and (s.match is None or s.match(args)):
                return s
        return None

    def _consume(self, s: Script) -> None:
        if s.times is not None:
            s.times -= 1
            if s.times <= 0:
                self.scripts.remove(s)

    def _fail_if_scripted(self, op: str, args: dict[str, Any]) -> None:
        """Take the script of this call, if any; raise its errno (perf calls: no log, no result)."""
        script = self._scripted(op, args)
        if script is not None:
            self._consume(script)
            if script.errno is not None:
                raise self._fail(op, args, script.errno)

    def _new_fd(self, kind: str) -> int:
        fd = self._next_fd
        self._next_fd += 1
        self.open_fds[fd] = kind
        return fd

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _fail(self, op: str, args: dict[str, Any], err: int) -> SyscallError:
        self.calls.append(Call(op, MappingProxyType(args), None, err))
        return SyscallError(err, op)

    def _ok(self, op: str, args: dict[str, Any], result: int) -> int:
        self.calls.append(Call(op, MappingProxyType(args), result, None))
        return result

    # ------------------------------------------------------------------- bpf

    def bpf(self, cmd: int, attr: ctypes.Structure, size: int, *, operation: str) -> int:
        op = abi.Cmd(cmd).operation
        args = _decode_struct(attr, size)
        self._decode_pointers(op, attr, args)
        if self.bpf_attr_size is not None and size > self.bpf_attr_size:
            tail = ctypes.string_at(ctypes.addressof(attr) + self.bpf_attr_size, size - self.bpf_attr_size)
            if tail.strip(b"\0"):
                raise self._fail(op, args, E.E2BIG)
        if not (self.capabilities >> CAP_BPF & 1 or self.capabilities >> CAP_SYS_ADMIN & 1):
            raise self._fail(op, args, E.EPERM)
        if self.memlock_charged and op in _MEMLOCK_CHARGED and self.memlock[0] != RLIM_INFINITY:
            raise self._fail(op, args, E.EPERM)
        script = self._scripted(op, args)
        if script is not None:
            if script.errno is not None:
                err = self._write_log(op, attr, script)
                if err != E.ENOSPC:
                    self._consume(script)
                raise self._fail(op, args, err)
            self._consume(script)
            if script.result is not None:
                return self._ok(op, args, script.result)
        try:
            result = self._simulate(op, attr, args)
        except SyscallError as exc:
            raise self._fail(op, args, exc.errno or E.EIO) from None
        return self._ok(op, args, result)

    def _write_log(self, op: str, attr: ctypes.Structure, script: Script) -> int:
        """Write a scripted log like the kernel: ENOSPC (and the needed size) when it does not fit."""
        assert script.errno is not None
        if script.log is None:
            return script.errno
        if op == "BPF_PROG_LOAD":
            level, size, buf, true_field = attr.log_level, attr.log_size, attr.log_buf, "log_true_size"
        elif op == "BPF_BTF_LOAD":
            level, size, buf = attr.btf_log_level, attr.btf_log_size, attr.btf_log_buf
            true_field = "btf_log_true_size"
        else:
            return script.errno
        if not level or not buf or not size:
            return script.errno
        text = script.log.encode() + b"\0"
        if script.report_true_size:
            setattr(attr, true_field, len(text))
        if len(text) > size:
            ctypes.memmove(buf, text[: size - 1] + b"\0", size)
            return E.ENOSPC
        ctypes.memmove(buf, text, len(text))
        return script.errno

    def _decode_pointers(self, op: str, attr: ctypes.Structure, args: dict[str, Any]) -> None:
        if op in (
            "BPF_MAP_LOOKUP_ELEM",
            "BPF_MAP_UPDATE_ELEM",
            "BPF_MAP_DELETE_ELEM",
            "BPF_MAP_GET_NEXT_KEY",
        ):
            m = self.maps.get(attr.map_fd)
            if m is not None:
                args["key"] = _read(attr.key, m.key_size)
                if op == "BPF_MAP_UPDATE_ELEM":
                    args["value"] = _read(attr.value, m.value_size)
        elif op == "BPF_MAP_UPDATE_BATCH":
            m = self.maps.get(attr.map_fd)
            if m is not None:
                args["keys"] = _read(attr.keys, attr.count * m.key_size)
                args["values"] = _read(attr.values, attr.count * m.value_size)
        elif op == "BPF_PROG_LOAD":
            args["insns"] = _read(attr.insns, attr.insn_cnt * 8)
            args["license"] = ctypes.string_at(attr.license).decode() if attr.license else ""
            if attr.fd_array:  # as far as the program's kfunc calls index it
                code = args["insns"]
                insns = [asm.decode(code, i) for i in range(asm.count(code))]
                offs = [i.off for i in insns if i.code == asm.OP_CALL and i.src == abi.BPF_PSEUDO_KFUNC_CALL]
                count = 1 + max(offs, default=0)
                args["fd_array_fds"] = tuple((ctypes.c_int32 * count).from_address(attr.fd_array))
        elif op == "BPF_BTF_LOAD":
            args["btf"] = _read(attr.btf, attr.btf_size)

    def _map(self, fd: int) -> FakeMap:
        m = self.maps.get(fd)
        if m is None:
            raise SyscallError(E.EBADF, "map")
        return m

    def _check_key(self, m: FakeMap, key: bytes) -> None:
        if m.type in _ARRAYS and int.from_bytes(key[:4], "little") >= m.max_entries:
            raise SyscallError(E.E2BIG, "key")

    def _simulate(self, op: str, attr: Any, args: dict[str, Any]) -> int:
        if op == "BPF_MAP_CREATE":
            if not (attr.key_size and attr.value_size and attr.max_entries):
                raise SyscallError(E.EINVAL, op)
            fd = self._new_fd("map")
            self.maps[fd] = FakeMap(
                attr.map_type,
                attr.key_size,
                attr.value_size,
                attr.max_entries,
                attr.map_flags,
                args["map_name"],
                self._new_id(),
            )
            return fd
        if op == "BPF_MAP_UPDATE_ELEM":
            m = self._map(attr.map_fd)
            if m.frozen:
                raise SyscallError(E.EPERM, op)
            self._check_key(m, args["key"])
            m.data[args["key"]] = args["value"]
            return 0
        if op == "BPF_MAP_UPDATE_BATCH":
            m = self._map(attr.map_fd)
            keys, values = args["keys"], args["values"]
            for i in range(attr.count):
                key = keys[i * m.key_size : (i + 1) * m.key_size]
                self._check_key(m, key)
                m.data[key] = values[i * m.value_size : (i + 1) * m.value_size]
            return 0
        if op == "BPF_MAP_LOOKUP_ELEM":
            m = self._map(attr.map_fd)
            key = args["key"]
            if key not in m.data:
                if m.type != MapType.ARRAY or int.from_bytes(key[:4], "little") >= m.max_entries:
                    raise SyscallError(E.ENOENT, op)
            ctypes.memmove(attr.value, m.data.get(key, bytes(m.value_size)), m.value_size)
            return 0
        if op == "BPF_MAP_DELETE_ELEM":
            m = self._map(attr.map_fd)
            if m.data.pop(args["key"], None) is None:
                raise SyscallError(E.ENOENT, op)
            return 0
        if op == "BPF_MAP_GET_NEXT_KEY":
            m = self._map(attr.map_fd)
            keys = sorted(m.data)
            later = [k for k in keys if attr.key == 0 or k > args["key"]]
            if not later:
                raise SyscallError(E.ENOENT, op)
            ctypes.memmove(attr.next_key, later[0], m.key_size)
            return 0
        if op == "BPF_MAP_LOOKUP_BATCH":
            m = self._map(attr.map_fd)
            start = ctypes.c_uint32.from_address(attr.in_batch).value if attr.in_batch else 0
            keys = sorted(m.data, key=lambda k: int.from_bytes(k, "little"))[start : start + attr.count]
            for i, key in enumerate(keys):
                ctypes.memmove(attr.keys + i * m.key_size, key, m.key_size)
                ctypes.memmove(attr.values + i * m.value_size, m.data[key], m.value_size)
            ctypes.c_uint32.from_address(attr.out_batch).value = start + len(keys)
            attr.count = len(keys)
            if start + len(keys) >= len(m.data):
                raise SyscallError(E.ENOENT, op)
            return 0
        if op == "BPF_MAP_FREEZE":
            self._map(attr.map_fd).frozen = True
            return 0
        if op == "BPF_PROG_LOAD":
            args["attach_btf_obj_id"] = self._attach_btf_obj(attr)
            fd = self._new_fd("prog")
            self.programs[fd] = dict(args, id=self._new_id())
            return fd
        if op == "BPF_BTF_LOAD":
            return self._new_fd("btf")
        if op == "BPF_RAW_TRACEPOINT_OPEN":
            if attr.prog_fd not in self.programs:
                raise SyscallError(E.EBADF, op)
            self.raw_tracepoints.append(ctypes.string_at(attr.name).decode() if attr.name else "")
            return self._new_fd("link")
        if op == "BPF_LINK_CREATE":
            if attr.prog_fd not in self.programs or self.open_fds.get(attr.target_fd) != "perf":
                raise SyscallError(E.EBADF, op)
            return self._new_fd("link")
        if op == "BPF_OBJ_GET_INFO_BY_FD":
            return self._info(attr)
        if op == "BPF_BTF_GET_FD_BY_ID":
            if attr.start_id not in self.btf_objects or attr.start_id in self.btf_gone:
                raise SyscallError(E.ENOENT, op)
            fd = self._new_fd("btf")
            self.btf_fds[fd] = attr.start_id
            return fd
        if op in ("BPF_PROG_GET_NEXT_ID", "BPF_MAP_GET_NEXT_ID", "BPF_BTF_GET_NEXT_ID"):
            ids = {
                "BPF_PROG_GET_NEXT_ID": [p["id"] for p in self.programs.values()],
                "BPF_MAP_GET_NEXT_ID": [m.id for m in self.maps.values()],
                "BPF_BTF_GET_NEXT_ID": list(self.btf_objects),
            }[op]
            later = sorted(i for i in ids if i > attr.start_id)
            if not later:
                raise SyscallError(E.ENOENT, op)
            attr.next_id = later[0]
            return 0
        raise SyscallError(E.EINVAL, op)

    def _attach_btf_obj(self, attr: Any) -> int:
        """The id of the kernel BTF object ``attach_btf_obj_fd`` (the union's ``attach_prog_fd``)
        is open on, as the kernel checks it; 0 for none (vmlinux's BTF) or a program fd."""
        fd = attr.attach_prog_fd
        if not fd or fd in self.programs:
            return 0
        if self.open_fds.get(fd) != "btf":
            raise SyscallError(E.EINVAL, "BPF_PROG_LOAD")  # neither a program nor a BTF
        btf_id = self.btf_fds.get(fd)  # None: one BPF_BTF_LOAD made
        if btf_id is None or not self.btf_objects[btf_id][1]:
            raise SyscallError(524, "BPF_PROG_LOAD")  # ENOTSUPP: a program's BTF, not the kernel's
        if not attr.attach_btf_id:
            raise SyscallError(E.EINVAL, "BPF_PROG_LOAD")
        return btf_id

    def _info(self, attr: Any) -> int:
        if attr.bpf_fd in self.maps:
            m = self.maps[attr.bpf_fd]
            info = abi.MapInfo(
                type=m.type,
                id=m.id,
                key_size=m.key_size,
                value_size=m.value_size,
                max_entries=m.max_entries,
                map_flags=m.flags,
                name=m.name.encode(),
            )
        elif attr.bpf_fd in self.btf_fds:
            return self._btf_info(attr)
        elif attr.bpf_fd in self.programs:
            p = self.programs[attr.bpf_fd]
            info = abi.ProgInfo(
                type=p["prog_type"],
                id=p["id"],
                name=p["prog_name"].encode(),
                xlated_prog_len=len(p["insns"]),
                gpl_compatible=int(p["license"] == "GPL"),
                attach_btf_obj_id=p["attach_btf_obj_id"],
                attach_btf_id=p["attach_btf_id"],
            )
        else:
            raise SyscallError(E.EBADF, "BPF_OBJ_GET_INFO_BY_FD")
        n = min(attr.info_len, ctypes.sizeof(info))
        ctypes.memmove(attr.info, ctypes.addressof(info), n)
        attr.info_len = n
        return 0

    def _btf_info(self, attr: Any) -> int:
        """``struct bpf_btf_info`` of a BTF object: its bytes (as many as fit), name, id, size."""
        btf_id = self.btf_fds[attr.bpf_fd]
        name, kernel_btf, data = self.btf_objects[btf_id]
        info = BtfInfo.from_address(attr.info)
        if info.btf:
            ctypes.memmove(info.btf, data, min(info.btf_size, len(data)))
        if info.name and info.name_len:
            text = name.encode()[: info.name_len - 1] + b"\0"
            ctypes.memmove(info.name, text, len(text))
        info.id, info.btf_size, info.kernel_btf = btf_id, len(data), int(kernel_btf)
        return 0

    # ----------------------------------------------------------- perf & misc

    def perf_event_open(self, attr: ctypes.Structure, pid: int, cpu: int, group_fd: int, flags: int) -> int:
        assert isinstance(attr, PerfEventAttr)
        args = _decode_struct(attr, attr.size)
        args["flag_names"] = tuple(f.name for f in AttrFlag if attr.flags & f)
        args.update(pid=pid, cpu=cpu, group_fd=group_fd, open_flags=flags | PERF_FLAG_FD_CLOEXEC)
        op = "perf_event_open"
        if self.perf_attr_size is not None and attr.size > self.perf_attr_size:
            tail = ctypes.string_at(
                ctypes.addressof(attr) + self.perf_attr_size, attr.size - self.perf_attr_size
            )
            if tail.strip(b"\0"):
                attr.size = self.perf_attr_size
                raise self._fail(op, args, E.E2BIG)
        if not (self.capabilities >> CAP_PERFMON & 1 or self.capabilities >> CAP_SYS_ADMIN & 1):
            raise self._fail(op, args, E.EACCES)
        self._fail_if_scripted(op, args)
        return self._ok(op, args, self._new_fd("perf"))

    def ioctl(self, fd: int, request: int, arg: int, *, operation: str) -> int:
        op = f"PERF_EVENT_IOC_{Ioctl(request).name}"
        args = {"fd": fd, "arg": arg}
        if self.open_fds.get(fd) != "perf":
            raise self._fail(op, args, E.EBADF)
        if request == Ioctl.SET_BPF and arg not in self.programs:
            raise self._fail(op, args, E.EBADF)
        self._fail_if_scripted(op, args)
        return self._ok(op, args, 0)

    def mmap(self, length: int, prot: int, flags: int, fd: int, offset: int) -> int:
        args = {"length": length, "prot": prot, "flags": flags, "fd": fd, "offset": offset}
        if self.open_fds.get(fd) not in ("perf", "map"):  # perf rings, BPF ring buffer maps
            raise self._fail("mmap", args, E.EBADF)
        buf = ctypes.create_string_buffer(length)
        address = ctypes.addressof(buf)
        self.mappings[address] = buf
        return self._ok("mmap", args, address)

    def munmap(self, address: int, length: int) -> None:
        args = {"address": address, "length": length}
        if address not in self.mappings:
            raise self._fail("munmap", args, E.EINVAL)
        del self.mappings[address]
        self._ok("munmap", args, 0)

    def close(self, fd: int) -> None:
        if fd not in self.open_fds:
            raise self._fail("close", {"fd": fd}, E.EBADF)
        del self.open_fds[fd]
        self.maps.pop(fd, None)
        self.programs.pop(fd, None)
        self.btf_fds.pop(fd, None)
        self._ok("close", {"fd": fd}, 0)

    def effective_capabilities(self) -> int:
        return self.capabilities

    def memlock_limit(self) -> tuple[int, int]:
        return self.memlock

    def set_memlock_limit(self, soft: int, hard: int) -> None:
        self.memlock = (soft, hard)
        self._ok("setrlimit", {"resource": "RLIMIT_MEMLOCK", "soft": soft, "hard": hard}, 0)
