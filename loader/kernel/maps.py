"""Map operations of ``Kernel``: creating maps, single elements, batches, freezing, describing."""

from __future__ import annotations

import ctypes
import errno as E
from collections.abc import Iterator

from evspec.loader.abi import bpf as abi
from evspec.loader.kernel.base import KernelBase, address, bytes_address, in_buffer
from evspec.loader.kernel.errors import ENOTSUPP, KernelError

from evspec.codes import kernel as codes
from evspec.span import Slotted

_NO_BATCH_ERRNOS = (E.EINVAL, E.EOPNOTSUPP, ENOTSUPP)  # batch commands the map does not support
_MAX_BATCH = 0xFFFFFFFF  # attr.batch.count is a u32


def _map_fd(fd: int) -> str:
    """What an error says of a map the caller did not name."""
    return f"map fd {fd}"


class MapDescription(Slotted):
    """A map as BPF_OBJ_GET_INFO_BY_FD describes it."""

    id: int
    type: int
    name: str
    key_size: int
    value_size: int
    max_entries: int
    flags: int
    btf_id: int
    map_extra: int = 0
    btf_key_type_id: int = 0
    btf_value_type_id: int = 0


class MapOperations(KernelBase):
    def create_map(
        self,
        map_type: int,
        key_size: int,
        value_size: int,
        max_entries: int,
        *,
        flags: int = 0,
        name: str = "",
        btf_fd: int | None = None,
        btf_key_type_id: int = 0,
        btf_value_type_id: int = 0,
        inner_map_fd: int = 0,
        map_extra: int = 0,
        numa_node: int = 0,
    ) -> int:
        """Create a map; with ``btf_fd`` its key and value get those BTF types (left out on kernels
        that do not know the fields, see ``left_out``). ``numa_node`` counts only with the
        BPF_F_NUMA_NODE flag (the kernel's rule); ``inner_map_fd`` is the template of a map-in-map."""
        attr = abi.MapCreateAttr(
            map_type=map_type,
            key_size=key_size,
            value_size=value_size,
            max_entries=max_entries,
            map_flags=flags,
            inner_map_fd=inner_map_fd,
            numa_node=numa_node,
            map_name=abi.object_name(name),
            map_extra=map_extra,
        )
        if btf_fd is not None:
            attr.btf_fd = btf_fd
            attr.btf_key_type_id = btf_key_type_id
            attr.btf_value_type_id = btf_value_type_id
        return self._bpf_load(abi.Cmd.MAP_CREATE, attr, f"map '{name}'" if name else "")

    def update_elem(
        self, fd: int, key: bytes, value: bytes, flags: int = abi.UpdateFlag.ANY, *, what: str = ""
    ) -> None:
        kbuf, vbuf = in_buffer(key), in_buffer(value)
        attr = abi.MapElemAttr(map_fd=fd, key=address(kbuf), flags=flags)
        attr.value = address(vbuf)
        self._bpf(abi.Cmd.MAP_UPDATE_ELEM, attr, what or _map_fd(fd))

    def _read_elem(self, cmd: abi.Cmd, fd: int, key: bytes | None, size: int, what: str) -> bytes | None:
        """MAP_LOOKUP_ELEM or MAP_GET_NEXT_KEY: ``key`` in (NULL for None), ``size`` bytes out
        through the attribute's value/next_key union; None when the kernel has nothing (ENOENT)."""
        kbuf = None if key is None else in_buffer(key)
        out = ctypes.create_string_buffer(max(size, 1))
        attr = abi.MapElemAttr(map_fd=fd, key=address(kbuf))
        attr.value = address(out)
        if not self._bpf_unless_missing(cmd, attr, what or _map_fd(fd)):
            return None
        return out.raw[:size]

    def lookup(self, fd: int, key: bytes, value_size: int, *, what: str = "") -> bytes | None:
        """The value stored under ``key``, or None when there is none."""
        return self._read_elem(abi.Cmd.MAP_LOOKUP_ELEM, fd, key, value_size, what)

    def delete_elem(self, fd: int, key: bytes, *, what: str = "") -> bool:
        """Delete the element under ``key``; False when there was none."""
        kbuf = in_buffer(key)
        attr = abi.MapElemAttr(map_fd=fd, key=address(kbuf))
        return self._bpf_unless_missing(abi.Cmd.MAP_DELETE_ELEM, attr, what or _map_fd(fd))

    def next_key(self, fd: int, key: bytes | None, key_size: int, *, what: str = "") -> bytes | None:
        """The key after ``key`` (the first key for None), or None after the last."""
        return self._read_elem(abi.Cmd.MAP_GET_NEXT_KEY, fd, key, key_size, what)

    def update_batch(
        self,
        fd: int,
        keys: bytes,
        values: bytes,
        *,
        key_size: int,
        value_size: int,
        flags: int = abi.UpdateFlag.ANY,
        what: str = "",
    ) -> int:
        """Write ``len(keys) // key_size`` elements in one BPF_MAP_UPDATE_BATCH (``what`` names the
        map in errors; by default its fd).

        Kernels without batch support for the map (EINVAL, EOPNOTSUPP, ENOTSUPP) get one
        BPF_MAP_UPDATE_ELEM per element instead, from the first element on. Returns the count.
        """
        what = what or _map_fd(fd)
        where = f"{what}: "
        if key_size <= 0 or len(keys) % key_size:
            raise KernelError(
                codes.BAD_SIZE, f"{where}{len(keys)} key bytes are not a multiple of key_size {key_size}"
            )
        count = len(keys) // key_size
        if len(values) != count * value_size:
            raise KernelError(
                codes.BAD_SIZE,
                f"{where}the values of {count} elements are {len(values)} bytes, not {count} x {value_size}",
            )
        if count == 0:
            return 0
        if count > _MAX_BATCH:
            raise KernelError(codes.BAD_SIZE, f"{where}{count} elements do not fit one batch (at most 2**32 - 1)")
        keys, values = bytes(keys), bytes(values)  # the same objects when they are bytes already
        key_base, value_base = bytes_address(keys), bytes_address(values)
        attr = abi.MapBatchAttr(keys=key_base, values=value_base, count=count, map_fd=fd, elem_flags=flags)
        try:
            self._bpf(abi.Cmd.MAP_UPDATE_BATCH, attr, what)
            return count
        except KernelError as exc:
            if exc.errno not in _NO_BATCH_ERRNOS:
                raise
        elem = abi.MapElemAttr(map_fd=fd, flags=flags)
        for i in range(count):
            elem.key = key_base + i * key_size
            elem.value = value_base + i * value_size
            self._bpf(abi.Cmd.MAP_UPDATE_ELEM, elem, what)
        return count

    def lookup_batch(
        self, fd: int, *, key_size: int, value_size: int, chunk: int = 4096, what: str = ""
    ) -> tuple[bytes, bytes]:
        """Every key and value of the map, read with BPF_MAP_LOOKUP_BATCH ``chunk`` at a time."""
        kbuf = ctypes.create_string_buffer(key_size * chunk)
        vbuf = ctypes.create_string_buffer(value_size * chunk)
        token_in = ctypes.create_string_buffer(max(key_size, 8))
        token_out = ctypes.create_string_buffer(max(key_size, 8))
        keys: list[bytes] = []
        values: list[bytes] = []
        in_batch = 0  # NULL: from the start
        while True:
            attr = abi.MapBatchAttr(
                in_batch=in_batch,
                out_batch=address(token_out),
                keys=address(kbuf),
                values=address(vbuf),
                count=chunk,
                map_fd=fd,
            )
            more = self._bpf_unless_missing(abi.Cmd.MAP_LOOKUP_BATCH, attr, what or _map_fd(fd))
            n = attr.count  # the kernel sets it on ENOENT too: the elements of the last chunk
            keys.append(kbuf.raw[: n * key_size])
            values.append(vbuf.raw[: n * value_size])
            if not more:
                return b"".join(keys), b"".join(values)
            ctypes.memmove(token_in, token_out, len(token_out))
            in_batch = address(token_in)

    def freeze(self, fd: int, *, what: str = "") -> None:
        self._bpf(abi.Cmd.MAP_FREEZE, abi.MapElemAttr(map_fd=fd), what or _map_fd(fd))

    def map_info(self, fd: int) -> MapDescription:
        info = abi.MapInfo()
        self._info(fd, info, _map_fd(fd))
        return MapDescription(
            id=info.id,
            type=info.type,
            name=info.name.decode(errors="replace"),
            key_size=info.key_size,
            value_size=info.value_size,
            max_entries=info.max_entries,
            flags=info.map_flags,
            btf_id=info.btf_id,
            map_extra=info.map_extra,
            btf_key_type_id=info.btf_key_type_id,
            btf_value_type_id=info.btf_value_type_id,
        )

    def pin(self, fd: int, path: str, *, what: str = "") -> None:
        """BPF_OBJ_PIN: make ``path`` (on a bpffs mount) refer to the object of ``fd``."""
        buf = in_buffer(path.encode() + b"\0")
        self._bpf(abi.Cmd.OBJ_PIN, abi.ObjAttr(pathname=address(buf), bpf_fd=fd), what or path)

    def pinned(self, path: str, *, what: str = "") -> int | None:
        """BPF_OBJ_GET: a new fd of the object pinned at ``path``; None when nothing is (ENOENT)."""
        buf = in_buffer(path.encode() + b"\0")
        try:
            return self._bpf(abi.Cmd.OBJ_GET, abi.ObjAttr(pathname=address(buf)), what or path)
        except KernelError as exc:
            if exc.errno == E.ENOENT:
                return None
            raise

    def map_ids(self) -> Iterator[int]:
        """The ids of every map on the system (BPF_MAP_GET_NEXT_ID)."""
        return self._next_ids(abi.Cmd.MAP_GET_NEXT_ID)
