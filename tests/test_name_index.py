"""The index of a target BTF (``name_index``) and its file in the user's cache.

Lookups through the index find exactly the types a walk over every type finds (flavours, names
that start inside another string, anonymous types, hash collisions); the file is used only when it
holds the index of exactly this BTF, whole, written by this user in a private directory; every
other file is ignored and the index made (and, where it may be, stored) again.
"""

from __future__ import annotations

import os
import struct
from array import array
from pathlib import Path

import pytest
from evspec.loader import user_cache
from evspec.loader.btf import name_index
from evspec.loader.btf.name_index import NameIndex
from evspec.loader.btf.reader import Btf, BtfError, BtfKind, RawType, type_info, write_btf
from evspec.loader.btf.target import TargetBtf, essential_name

NAMES = ["int", "task_struct", "task_struct___v1", "task_struct___v2___x", "my_file", "a___b", "____fput",
         "x___", "file___y", "é___1", "sched"]


def _blob(order: str = "<") -> tuple[bytes, dict[str, int]]:
    """A BTF with a type per name, anonymous pointers between them, a struct named by the tail
    of "my_file" ("file"), and a few repeats; the string offsets by name."""
    strings = b"\0"
    at: dict[str, int] = {}
    for name in NAMES:
        at[name] = len(strings)
        strings += name.encode() + b"\0"
    at["file"] = at["my_file"] + 3
    types = [RawType(at["int"], type_info(BtfKind.INT), 4, struct.pack(order + "I", 32))]
    for name in [*NAMES[1:], "file", "task_struct", "sched"]:
        types.append(RawType(0, type_info(BtfKind.PTR), 1))
        types.append(RawType(at[name], type_info(BtfKind.STRUCT), 8))
    return write_btf(types, strings, order), at


def _brute(btf: Btf, essential: str) -> tuple[int, ...]:
    return tuple(t.id for t in btf.types() if t.name and essential_name(t.name) == essential)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(name_index, "MIN_CACHED_BYTES", 0)
    return tmp_path / "evspec" / name_index.CACHE_DIR


@pytest.mark.parametrize("order", ["<", ">"])
def test_lookups_find_what_a_walk_finds(order: str) -> None:
    data, _ = _blob(order)
    target = TargetBtf(data, "t", cache=False)
    essentials = {essential_name(n) for n in NAMES} | {"file", "nothing", "task", "struct", "_", "é"}
    for name in sorted(essentials):
        assert target.named(name) == _brute(target.btf, name), name
    assert len(target.named("task_struct")) == 3  # task_struct twice, ___v1 (___v2___x is task_struct___v2)
    assert len(target.named("file")) == 2  # the tail of "my_file", and file___y
    assert target.named("") == ()


def test_a_hash_collision_answers_no_wrong_type() -> None:
    data, _ = _blob()
    btf = Btf(data)
    every = NameIndex.build(btf)
    ids = array("I", range(1, len(btf)))
    collide = NameIndex(every.starts, array("I", [name_index.zlib.crc32(b"sched")] * len(ids)), ids)
    target = TargetBtf(data, "t", cache=False)
    target._index = collide
    assert target.named("sched") == _brute(btf, "sched")
    assert target.named("task_struct") == ()  # its hash is in no entry now


def test_the_index_is_stored_and_used_again(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = _blob()
    first = TargetBtf(data, "t")
    [path] = cache.iterdir()
    size, crc = name_index.data_key(data)
    assert path.name == f"{crc:08x}-{size}.index"
    assert (cache.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)
    built = []
    monkeypatch.setattr(NameIndex, "build", classmethod(lambda cls, btf: built.append(btf) or first._index))
    second = TargetBtf(data, "t")
    assert not built, "the stored index was not used"
    assert list(second.btf.starts) == list(first.btf.starts)
    assert second.named("task_struct") == first.named("task_struct") == _brute(first.btf, "task_struct")


def _stored(cache: Path, data: bytes) -> Path:
    TargetBtf(data, "t")
    [path] = cache.iterdir()
    return path


def _rebuilt(data: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    built = []
    real = NameIndex.build.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(NameIndex, "build", classmethod(lambda cls, btf: built.append(1) or real(cls, btf)))
    target = TargetBtf(data, "t")
    assert target.named("task_struct") == _brute(target.btf, "task_struct")
    monkeypatch.undo()
    return bool(built)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "magic", "other data", "empty", "longer"])
def test_a_damaged_or_stale_file_is_rebuilt(cache: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    data, _ = _blob()
    path = _stored(cache, data)
    blob = path.read_bytes()
    if damage == "truncated":
        blob = blob[:-4]
    elif damage == "flipped":
        blob = blob[:-5] + bytes([blob[-5] ^ 1]) + blob[-4:]
    elif damage == "magic":
        blob = b"X" + blob[1:]
    elif damage == "other data":  # a whole index, made for another blob, under this one's name
        other, _ = _blob(">")
        blob = NameIndex.build(Btf(other)).to_bytes(*name_index.data_key(other))
    elif damage == "empty":
        blob = b""
    else:
        blob += b"\0\0\0\0"
    path.write_bytes(blob)
    assert _rebuilt(data, monkeypatch)
    assert NameIndex.from_bytes(path.read_bytes(), *name_index.data_key(data)) is not None  # written again


def test_an_index_that_does_not_fit_the_data_is_not_used(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose header and checksum are right but whose record starts are wrong (it cannot be
    made by this code): the BTF reader refuses the starts, and the index is made again."""
    data, _ = _blob()
    path = _stored(cache, data)
    good = NameIndex.from_bytes(path.read_bytes(), *name_index.data_key(data))
    assert good is not None
    bad = NameIndex(array("I", list(good.starts)[:-1]), good._hashes, good._ids)
    path.write_bytes(bad.to_bytes(*name_index.data_key(data)))
    assert _rebuilt(data, monkeypatch)
    with pytest.raises(BtfError, match="does not end with the type section"):
        Btf(data, starts=bad.starts)


def test_an_index_naming_types_that_are_not_there_is_refused(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that is whole (its CRC fits) but names a record the BTF lacks: the lookup that meets
    the id refuses, naming the index to remove, instead of answering without that type."""
    data, _ = _blob()
    good = NameIndex.build(Btf(data))
    hashes = list(good._hashes)
    ids = list(good._ids)
    task = ids.index(TargetBtf(data, cache=False).named("task_struct")[0])
    ids[task] = len(good.starts)
    bad = NameIndex(good.starts, array("I", hashes), array("I", ids))
    key = name_index.data_key(data)
    cache.mkdir(parents=True, mode=0o700)
    (cache / f"{key[1]:08x}-{key[0]}.index").write_bytes(bad.to_bytes(*key))
    target = TargetBtf(data)
    assert target.named("sched") == _brute(target.btf, "sched")
    with pytest.raises(BtfError, match=rf"names record {len(good.starts)} of .*index stored in {cache}.* remove it"):
        target.named("task_struct")


@pytest.mark.parametrize("starts", [[], [1], [0, 1], [0, 0, 999]])
def test_btf_checks_the_starts_it_is_given(starts: list[int]) -> None:
    data, _ = _blob()
    with pytest.raises(BtfError, match="given index"):
        Btf(data, starts=starts)


def test_a_file_of_another_user_is_not_trusted(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = _blob()
    _stored(cache, data)
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 1)  # what we wrote now belongs to somebody else
    assert user_cache.private_dir(name_index.CACHE_DIR) is None
    assert name_index.load(data, name_index.data_key(data)) is None


def test_a_file_others_may_write_is_not_trusted(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = _blob()
    path = _stored(cache, data)
    path.chmod(0o622)
    assert name_index.load(data, name_index.data_key(data)) is None
    assert _rebuilt(data, monkeypatch)


def test_a_directory_others_may_write_is_not_used(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = _blob()
    path = _stored(cache, data)
    cache.chmod(0o777)
    assert _rebuilt(data, monkeypatch)
    cache.chmod(0o700)
    path.unlink()
    cache.chmod(0o777)
    TargetBtf(data, "t")
    assert not list(cache.iterdir()), "an index was written into an unsafe directory"


def test_a_symlink_is_neither_read_nor_followed(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    data, _ = _blob()
    path = _stored(cache, data)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)
    assert name_index.load(data, name_index.data_key(data)) is None
    before = elsewhere.read_bytes()
    assert _rebuilt(data, monkeypatch)
    assert not path.is_symlink() and elsewhere.read_bytes() == before


def test_no_cache_small_blobs_or_no_home(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = _blob()
    TargetBtf(data, "t", cache=False)
    monkeypatch.setattr(name_index, "MIN_CACHED_BYTES", len(data) + 1)
    TargetBtf(data, "t")
    assert not cache.exists() or not list(cache.iterdir())
    monkeypatch.setattr(name_index, "MIN_CACHED_BYTES", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", "/proc/no-such-dir")  # cannot be created: made in memory only
    assert TargetBtf(data, "t").named("sched") == _brute(Btf(data), "sched")


def test_only_the_newest_indexes_are_kept(cache: Path) -> None:
    cache.mkdir(parents=True, mode=0o700)
    for i in range(name_index.KEEP_FILES + 2):
        old = cache / f"{i:08x}-1.index"
        old.write_bytes(b"")
        os.utime(old, (i, i))
    data, _ = _blob()
    TargetBtf(data, "t")
    kept = sorted(p.name for p in cache.iterdir())
    size, crc = name_index.data_key(data)
    assert len(kept) == name_index.KEEP_FILES and f"{crc:08x}-{size}.index" in kept
    assert f"{0:08x}-1.index" not in kept


def test_user_cache_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache.cache_root() == str(tmp_path / "evspec")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored, as XDG says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache.cache_root() == str(tmp_path / "home" / ".cache" / "evspec")
