"""The ctypes ABI of the kernel layer against the kernel's UAPI headers.

``EXPECTED`` holds the sizes and offsets of include/uapi/linux/bpf.h and perf_event.h, written out;
the ctypes structures must match them, and a small C program compiled against the installed headers
must print the same numbers (the proof that they are the kernel's).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import pytest
from evspec.loader import asm
from evspec.loader.abi import bpf as b
from evspec.loader.abi import perf as p
from evspec.loader.abi import perf_bits as pb
from evspec.loader.abi import perf_ids as pi
from evspec.loader.kernel import syscalls

# struct -> (size, {field: offset}); from include/uapi/linux/bpf.h and perf_event.h (Linux 6.4).
EXPECTED: dict[type[ctypes.Structure], tuple[int, dict[str, int]]] = {
    b.BpfInsn: (8, {"code": 0, "off": 2, "imm": 4}),
    b.MapCreateAttr: (
        72,
        {
            "map_type": 0,
            "key_size": 4,
            "value_size": 8,
            "max_entries": 12,
            "map_flags": 16,
            "inner_map_fd": 20,
            "numa_node": 24,
            "map_name": 28,
            "map_ifindex": 44,
            "btf_fd": 48,
            "btf_key_type_id": 52,
            "btf_value_type_id": 56,
            "btf_vmlinux_value_type_id": 60,
            "map_extra": 64,
        },
    ),
    b.MapElemAttr: (32, {"map_fd": 0, "key": 8, "value": 16, "next_key": 16, "flags": 24}),
    b.MapBatchAttr: (
        56,
        {
            "in_batch": 0,
            "out_batch": 8,
            "keys": 16,
            "values": 24,
            "count": 32,
            "map_fd": 36,
            "elem_flags": 40,
            "flags": 48,
        },
    ),
    b.ProgLoadAttr: (
        144,
        {
            "prog_type": 0,
            "insn_cnt": 4,
            "insns": 8,
            "license": 16,
            "log_level": 24,
            "log_size": 28,
            "log_buf": 32,
            "kern_version": 40,
            "prog_flags": 44,
            "prog_name": 48,
            "prog_ifindex": 64,
            "expected_attach_type": 68,
            "prog_btf_fd": 72,
            "func_info_rec_size": 76,
            "func_info": 80,
            "func_info_cnt": 88,
            "line_info_rec_size": 92,
            "line_info": 96,
            "line_info_cnt": 104,
            "attach_btf_id": 108,
            "attach_prog_fd": 112,
            "core_relo_cnt": 116,
            "fd_array": 120,
            "core_relos": 128,
            "core_relo_rec_size": 136,
            "log_true_size": 140,
        },
    ),
    b.BtfLoadAttr: (
        32,
        {
            "btf": 0,
            "btf_log_buf": 8,
            "btf_size": 16,
            "btf_log_size": 20,
            "btf_log_level": 24,
            "btf_log_true_size": 28,
        },
    ),
    b.ProgTestRunAttr: (
        80,
        {
            "prog_fd": 0,
            "retval": 4,
            "data_size_in": 8,
            "data_size_out": 12,
            "data_in": 16,
            "data_out": 24,
            "repeat": 32,
            "duration": 36,
            "ctx_size_in": 40,
            "ctx_size_out": 44,
            "ctx_in": 48,
            "ctx_out": 56,
            "flags": 64,
            "cpu": 68,
            "batch_size": 72,
        },
    ),
    b.GetNextIdAttr: (12, {"start_id": 0, "next_id": 4, "open_flags": 8}),
    b.ObjInfoAttr: (16, {"bpf_fd": 0, "info_len": 4, "info": 8}),
    b.LinkCreateAttr: (48, {"prog_fd": 0, "target_fd": 4, "attach_type": 8, "flags": 12, "bpf_cookie": 16}),
    b.MapInfo: (
        88,
        {
            "type": 0,
            "id": 4,
            "key_size": 8,
            "value_size": 12,
            "max_entries": 16,
            "map_flags": 20,
            "name": 24,
            "ifindex": 40,
            "btf_vmlinux_value_type_id": 44,
            "netns_dev": 48,
            "netns_ino": 56,
            "btf_id": 64,
            "btf_key_type_id": 68,
            "btf_value_type_id": 72,
            "map_extra": 80,
        },
    ),
    b.ProgInfo: (
        232,
        {
            "type": 0,
            "id": 4,
            "tag": 8,
            "jited_prog_len": 16,
            "xlated_prog_len": 20,
            "jited_prog_insns": 24,
            "xlated_prog_insns": 32,
            "load_time": 40,
            "created_by_uid": 48,
            "nr_map_ids": 52,
            "map_ids": 56,
            "name": 64,
            "ifindex": 80,
            "netns_dev": 88,
            "netns_ino": 96,
            "nr_jited_ksyms": 104,
            "nr_jited_func_lens": 108,
            "jited_ksyms": 112,
            "jited_func_lens": 120,
            "btf_id": 128,
            "func_info_rec_size": 132,
            "func_info": 136,
            "nr_func_info": 144,
            "nr_line_info": 148,
            "line_info": 152,
            "jited_line_info": 160,
            "nr_jited_line_info": 168,
            "line_info_rec_size": 172,
            "jited_line_info_rec_size": 176,
            "nr_prog_tags": 180,
            "prog_tags": 184,
            "run_time_ns": 192,
            "run_cnt": 200,
            "recursion_misses": 208,
            "verified_insns": 216,
            "attach_btf_obj_id": 220,
            "attach_btf_id": 224,
        },
    ),
    p.PerfEventAttr: (
        136,
        {
            "type": 0,
            "size": 4,
            "config": 8,
            "sample_period": 16,
            "sample_type": 24,
            "read_format": 32,
            "flags": 40,
            "wakeup_events": 48,
            "bp_type": 52,
            "config1": 56,
            "config2": 64,
            "branch_sample_type": 72,
            "sample_regs_user": 80,
            "sample_stack_user": 88,
            "clockid": 92,
            "sample_regs_intr": 96,
            "aux_watermark": 104,
            "sample_max_stack": 108,
            "aux_sample_size": 112,
            "sig_data": 120,
            "config3": 128,
        },
    ),
    p.MmapPage: (
        1088,
        {
            "version": 0,
            "compat_version": 4,
            "lock": 8,
            "index": 12,
            "offset": 16,
            "time_enabled": 24,
            "time_running": 32,
            "capabilities": 40,
            "pmc_width": 48,
            "time_shift": 50,
            "time_mult": 52,
            "time_offset": 56,
            "time_zero": 64,
            "size": 72,
            "time_cycles": 80,
            "time_mask": 88,
            "data_head": 1024,
            "data_tail": 1032,
            "data_offset": 1040,
            "data_size": 1048,
            "aux_head": 1056,
            "aux_tail": 1064,
            "aux_offset": 1072,
            "aux_size": 1080,
        },
    ),
    p.EventHeader: (8, {"type": 0, "misc": 4, "size": 6}),
}

# Where each structure lives in the UAPI: (C type, member prefix, whole type?).
# A bpf_attr variant that is an anonymous struct of the union is checked field by field.
C_PLACE: dict[type[ctypes.Structure], tuple[str, str, bool]] = {
    b.BpfInsn: ("struct bpf_insn", "", True),
    b.MapCreateAttr: ("union bpf_attr", "", False),
    b.MapElemAttr: ("union bpf_attr", "", False),
    b.MapBatchAttr: ("union bpf_attr", "batch.", False),
    b.ProgLoadAttr: ("union bpf_attr", "", False),
    b.BtfLoadAttr: ("union bpf_attr", "", False),
    b.ProgTestRunAttr: ("union bpf_attr", "test.", False),
    b.GetNextIdAttr: ("union bpf_attr", "", False),
    b.ObjInfoAttr: ("union bpf_attr", "info.", False),
    b.LinkCreateAttr: ("union bpf_attr", "link_create.", False),
    b.MapInfo: ("struct bpf_map_info", "", True),
    b.ProgInfo: ("struct bpf_prog_info", "", True),
    p.PerfEventAttr: ("struct perf_event_attr", "", True),
    p.MmapPage: ("struct perf_event_mmap_page", "", True),
    p.EventHeader: ("struct perf_event_header", "", True),
}
C_MEMBER = {(b.LinkCreateAttr, "bpf_cookie"): "perf_event.bpf_cookie"}
NO_C_MEMBER = {(p.PerfEventAttr, "flags")}  # the bit-field word: checked bit by bit below
# Fields newer than some UAPI headers: (struct, field) -> the first Linux version that has them.
SINCE = {
    (b.ProgLoadAttr, "log_true_size"): (6, 4),
    (b.BtfLoadAttr, "btf_log_true_size"): (6, 4),
    (p.PerfEventAttr, "config3"): (6, 3),
}

CONSTANTS: dict[str, int] = {
    **{f"BPF_{c.name}": c.value for c in b.Cmd},
    **{f"BPF_F_{f.name}": f.value for f in b.MapFlag},
    **{f"BPF_{f.name}": f.value for f in b.UpdateFlag},
    **{f"PERF_EVENT_IOC_{i.name}": i.value for i in p.Ioctl},
    **{f"PERF_SAMPLE_{s.name}": s.value for s in pb.SampleType},
    **{f"PERF_RECORD_{r.name}": r.value for r in p.RecordType},
    **{f"PERF_TYPE_{t.name}": t.value for t in pi.PerfType},
    **{f"PERF_COUNT_SW_{c.name}": c.value for c in pi.SwConfig},
    **{f"PERF_FORMAT_{f.name}": f.value for f in pb.ReadFormat if f is not pb.ReadFormat.LOST},
    **{f"PERF_SAMPLE_BRANCH_{b.name}": b.value for b in pb.BranchSampleType},
    **{f"PERF_ATTR_SIZE_VER{n}": getattr(pi, f"PERF_ATTR_SIZE_VER{n}") for n in range(8)},
    "BPF_PERF_EVENT": b.BPF_PERF_EVENT,
    "BPF_PSEUDO_MAP_FD": b.BPF_PSEUDO_MAP_FD,
    "BPF_PSEUDO_MAP_VALUE": b.BPF_PSEUDO_MAP_VALUE,
    "BPF_PSEUDO_CALL": b.BPF_PSEUDO_CALL,
    "BPF_PSEUDO_FUNC": b.BPF_PSEUDO_FUNC,
    "BPF_FUNC_map_lookup_elem": b.FUNC_MAP_LOOKUP_ELEM,
    "BPF_OBJ_NAME_LEN": b.BPF_OBJ_NAME_LEN,
    "BPF_TAG_SIZE": b.BPF_TAG_SIZE,
    "BPF_LD | BPF_IMM | BPF_DW": asm.OP_LD_IMM64,
    "BPF_JMP | BPF_CALL": asm.OP_CALL,
    "BPF_JMP | BPF_EXIT": asm.OP_EXIT,
    "BPF_JMP | BPF_JA": asm.OP_JA,
    "BPF_JMP | BPF_JEQ | BPF_K": asm.OP_JEQ_IMM,
    "BPF_JMP | BPF_JNE | BPF_K": asm.OP_JNE_IMM,
    "BPF_ALU64 | BPF_MOV | BPF_K": asm.OP_MOV64_IMM,
    "BPF_ALU64 | BPF_MOV | BPF_X": asm.OP_MOV64_REG,
    "BPF_ALU64 | BPF_ADD | BPF_K": asm.OP_ADD64_IMM,
    "BPF_ALU64 | BPF_ADD | BPF_X": asm.OP_ADD64_REG,
    "BPF_ALU64 | BPF_LSH | BPF_K": asm.OP_LSH64_IMM,
    "BPF_ALU64 | BPF_RSH | BPF_K": asm.OP_RSH64_IMM,
    "BPF_ALU64 | BPF_ARSH | BPF_K": asm.OP_ARSH64_IMM,
    "BPF_LDX | BPF_MEM | BPF_DW": asm.ldx(8),
    "BPF_LDX | BPF_MEM | BPF_H": asm.ldx(2),
    "BPF_STX | BPF_MEM | BPF_W": asm.stx(4),
    "BPF_STX | BPF_MEM | BPF_B": asm.stx(1),
    "BPF_ST | BPF_MEM | BPF_DW": asm.st(8),
    "BPF_JMP32": asm.JMP32,
    "PERF_FLAG_FD_NO_GROUP": p.PERF_FLAG_FD_NO_GROUP,
    "PERF_FLAG_FD_OUTPUT": p.PERF_FLAG_FD_OUTPUT,
    "PERF_FLAG_PID_CGROUP": p.PERF_FLAG_PID_CGROUP,
    "PERF_FLAG_FD_CLOEXEC": p.PERF_FLAG_FD_CLOEXEC,
}
GATED_CONSTANTS = {"PERF_ATTR_SIZE_VER8": pi.PERF_ATTR_SIZE_VER8}  # #ifdef'd: newer headers only
# Enumerators of newer headers than some (no #ifdef for them): name -> (first Linux version, value).
VERSIONED_CONSTANTS = {
    "PERF_FORMAT_LOST": ((6, 0), pb.ReadFormat.LOST),
    "BPF_FUNC_loop": ((5, 17), b.FUNC_LOOP),
}


def _field_names(cls: type[ctypes.Structure]) -> list[str]:
    names = [f[0] for f in cls._fields_ if not f[0].startswith("_") and len(f) == 2]
    if cls is b.MapElemAttr:
        names += ["value", "next_key"]
    return names


# --------------------------------------------------------------- pure checks


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_structure_matches_the_uapi_numbers(cls: type[ctypes.Structure]) -> None:
    size, offsets = EXPECTED[cls]
    assert ctypes.sizeof(cls) == size
    assert {name: getattr(cls, name).offset for name in _field_names(cls)} == offsets


def test_encoded_instructions_are_struct_bpf_insn() -> None:
    encoded = asm.encode(asm.OP_LD_IMM64, 3, b.BPF_PSEUDO_MAP_FD, -2, -7)
    assert len(encoded) == b.INSN_SIZE == ctypes.sizeof(b.BpfInsn)
    insn = b.BpfInsn.from_buffer_copy(encoded)
    assert (insn.code, insn.dst_reg, insn.src_reg, insn.off, insn.imm) == (0x18, 3, 1, -2, -7)
    assert asm.decode(encoded, 0) == (0x18, 3, 1, -2, -7)
    assert asm.src_reg(encoded[1]) == 1


def test_ld_imm64_and_rewriting_an_instruction() -> None:
    value = 0x1234_5678_9ABC_DEF0
    pair = asm.ld_imm64(2, value, b.BPF_PSEUDO_MAP_VALUE)
    first, second = asm.decode(pair, 0), asm.decode(pair, 1)
    assert asm.count(pair) == 2 and (first.code, first.dst, first.src) == (asm.OP_LD_IMM64, 2, 2)
    assert (first.imm & 0xFFFFFFFF) | (second.imm & 0xFFFFFFFF) << 32 == value and second.code == 0
    assert asm.decode(asm.ld_imm64(0, -1), 1).imm == -1
    buf = bytearray(pair)
    asm.put(buf, 1, second._replace(imm=7))
    assert buf[:8] == pair[:8] and asm.decode(buf, 1).imm == 7
    assert asm.s32(0xFFFF_FFFF) == -1 and asm.s32(1 << 32 | 5) == 5 and asm.s32(0x7FFF_FFFF) == 0x7FFF_FFFF
    with pytest.raises(KeyError):
        asm.ldx(3)  # no load moves 3 bytes


def test_bitfields_and_flag_helpers() -> None:
    insn = b.BpfInsn(code=0x18, dst_reg=1, src_reg=2, off=-1, imm=-2)
    assert bytes(insn) == bytes([0x18, 0x21, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFF])
    info = bytes(b.ProgInfo(gpl_compatible=1))
    assert info.index(1) == 84 and info.count(0) == len(info) - 1
    assert pb.precise_ip(3) == pb.AttrFlag.PRECISE_IP_LOW | pb.AttrFlag.PRECISE_IP_HIGH
    with pytest.raises(ValueError):
        pb.precise_ip(4)
    assert p.Ioctl.ENABLE == 0x2400 and p.Ioctl.SET_BPF == 0x40042408 and p.Ioctl.ID == 0x80082407


def test_object_names_are_made_acceptable() -> None:
    assert b.object_name("on_enter") == b"on_enter"
    assert b.object_name(".rodata") == b".rodata"
    assert b.object_name("a-b:c") == b"a_b_c"
    assert b.object_name("a_very_long_program_name") == b"a_very_long_pro"


def test_syscall_numbers_per_architecture() -> None:
    assert syscalls.syscall_numbers("x86_64").bpf == 321
    assert syscalls.syscall_numbers("arm64").perf_event_open == 241
    with pytest.raises(syscalls.UnsupportedArchitecture):
        syscalls.syscall_numbers("riscv64")


# ------------------------------------------------- the C compiler's numbers


def _c_program() -> str:
    out = [
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        "#include <linux/bpf.h>",
        "#include <linux/perf_event.h>",
        "#include <linux/version.h>",
        '#define F(n, T, m) printf("%s %zu %zu\\n", n, offsetof(T, m), sizeof(((T *)0)->m))',
        '#define S(n, T) printf("%s %zu 0\\n", n, sizeof(T))',
        '#define V(n, v) printf("%s %llu 0\\n", n, (unsigned long long)(v))',
        "static unsigned long long word(const void *p) { unsigned long long w; memcpy(&w, p, 8); return w; }",
        "static size_t first_set(const void *p, size_t n) {",
        "  for (size_t i = 0; i < n; i++) if (((const unsigned char *)p)[i]) return i; return n; }",
        "int main(void) {",
    ]
    for cls, (ctype, prefix, whole) in C_PLACE.items():
        if whole:
            out.append(f'S("{cls.__name__}", {ctype});')
        elif prefix:
            out.append(f'S("{cls.__name__}", ((({ctype} *)0)->{prefix.rstrip(".")}));')
        for name in _field_names(cls):
            if (cls, name) in NO_C_MEMBER:
                continue
            member = prefix + C_MEMBER.get((cls, name), name)
            line = f'F("{cls.__name__}.{name}", {ctype}, {member});'
            since = SINCE.get((cls, name))
            if since:
                line = f"#if LINUX_VERSION_CODE >= KERNEL_VERSION({since[0]}, {since[1]}, 0)\n{line}\n#endif"
            out.append(line)
    for name, _ in CONSTANTS.items():
        out.append(f'V("{name}", {name});')
    for name in GATED_CONSTANTS:
        out.append(f'#ifdef {name}\nV("{name}", {name});\n#endif')
    for name, ((major, minor), _) in VERSIONED_CONSTANTS.items():
        out.append(f'#if LINUX_VERSION_CODE >= KERNEL_VERSION({major}, {minor}, 0)\nV("{name}", {name});\n#endif')
    for flag in pb.AttrFlag:
        assert flag.name is not None
        if flag.name.startswith("PRECISE_IP"):
            member, value = "precise_ip", 1 if flag.name.endswith("LOW") else 2
        else:
            member, value = flag.name.lower(), 1
        out.append(f"{{ struct perf_event_attr a; memset(&a, 0, sizeof a); a.{member} = {value};")
        out.append(f'  V("flag.{flag.name}", word((char *)&a + 40)); }}')
    out.append(
        '{ struct bpf_insn i; memset(&i, 0, sizeof i); i.dst_reg = 1; i.src_reg = 2; V("insn.regs", ((unsigned char *)&i)[1]); }'
    )
    out.append(
        '{ struct bpf_prog_info i; memset(&i, 0, sizeof i); i.gpl_compatible = 1; V("gpl_compatible", first_set(&i, sizeof i)); }'
    )
    out.append("return 0; }")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def uapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int]]:
    cc = shutil.which("cc")
    if cc is None:
        if os.environ.get("CI") == "true":
            raise RuntimeError("cc is required in CI to check the ABI against the UAPI headers")
        pytest.skip("no C compiler: the UAPI cross-check needs cc")
    d = tmp_path_factory.mktemp("uapi")
    src, exe = d / "uapi.c", d / "uapi"
    src.write_text(_c_program())
    subprocess.run([cc, "-std=gnu11", "-Wall", "-o", str(exe), str(src)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    out: dict[str, tuple[int, int]] = {}
    for line in lines:
        name, a, c = line.rsplit(" ", 2)
        out[name] = (int(a), int(c))
    return out


@pytest.mark.parametrize("cls", list(C_PLACE), ids=lambda c: c.__name__)
def test_structure_matches_the_installed_header(
    cls: type[ctypes.Structure], uapi: dict[str, tuple[int, int]]
) -> None:
    _ctype, _prefix, whole = C_PLACE[cls]
    size, offsets = EXPECTED[cls]
    end = 0
    for name, offset in offsets.items():
        if (cls, name) in NO_C_MEMBER:
            continue
        key = f"{cls.__name__}.{name}"
        if key not in uapi:
            assert (cls, name) in SINCE, f"{key} missing from the header"
            continue
        c_offset, c_size = uapi[key]
        assert (c_offset, c_size) == (offset, getattr(cls, name).size), key
        end = max(end, c_offset + c_size)
    header_has_all = all(f"{cls.__name__}.{n}" in uapi for n in offsets if (cls, n) not in NO_C_MEMBER)
    if whole and header_has_all:
        assert uapi[cls.__name__][0] == size
    elif whole:  # an older header: the struct ends where its last known field ends
        assert uapi[cls.__name__][0] == end
    else:
        align = ctypes.alignment(cls)
        assert (end + align - 1) // align * align <= size
        if cls.__name__ in uapi:  # a named variant: ours may stop before the union's newer arms
            assert size <= uapi[cls.__name__][0]


def test_constants_match_the_installed_header(uapi: dict[str, tuple[int, int]]) -> None:
    for name, value in CONSTANTS.items():
        assert uapi[name][0] == value, name
    for name, value in GATED_CONSTANTS.items():
        if name in uapi:
            assert uapi[name][0] == value, name
    for name, (_since, value) in VERSIONED_CONSTANTS.items():
        if name in uapi:
            assert uapi[name][0] == value, name


def test_bitfields_match_the_installed_header(uapi: dict[str, tuple[int, int]]) -> None:
    for flag in pb.AttrFlag:
        assert uapi[f"flag.{flag.name}"][0] == flag.value, flag.name
    assert uapi["insn.regs"][0] == bytes(b.BpfInsn(dst_reg=1, src_reg=2))[1]
    assert uapi["gpl_compatible"][0] == bytes(b.ProgInfo(gpl_compatible=1)).index(1)
