"""Compiling BPF C sources with clang the way perf did, with a private on-disk cache.

perf's command line was ``clang -D__KERNEL__ -D__NR_CPUS__=N -DLINUX_VERSION_CODE=V ...
-Wno-unused-value -Wno-pointer-sign -c SRC -target bpf -g -O2``; evspec adds
``-D__TARGET_ARCH_<arch>`` of the machine as libbpf-bootstrap's builds do (bpf_tracing.h's
PT_REGS macros need it), the host's multiarch include directory (``asm/types.h``) and its own
bundled headers (``<uapi/linux/bpf.h>`` with the kernel's ``u8``..``s64``), then the caller's
flags (the user's ``--clang-opt``, perf's ``llvm.clang-opt``).

The cache works like ccache's direct mode. A *manifest*, keyed by the source bytes, its path, the
``clang --version`` text and the full flag list, records the headers clang reported (``-MD -MF``)
the last time; the object is keyed by that key plus the path and contents of each of those
headers, so editing an included header misses. The cache directory must be a real directory owned
by the current user and not writable by group or others (else a planted object could end up in the
kernel); when it is not, evspec compiles into a fresh private temporary directory and logs why.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from evspec.loader import user_cache
from evspec.loader.errors import ObjectError
from evspec.loader.object.input_file import read_input

from evspec.codes import bpf as codes
from evspec.cpus import possible_cpus

log = logging.getLogger(__name__)

CACHE_FORMAT = b"evspec-bpf-cache-v1"
_MULTIARCH = {
    "x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "armv7l": "arm-linux-gnueabihf",
    "ppc64le": "powerpc64le-linux-gnu", "s390x": "s390x-linux-gnu", "riscv64": "riscv64-linux-gnu",
    "i686": "i386-linux-gnu", "loongarch64": "loongarch64-linux-gnu",
}

# uname -m -> the kernel's architecture directory, which bpf_tracing.h's __TARGET_ARCH_ names
_TARGET_ARCH = (
    (r"x86_64|i[3-6]86", "x86"), (r"aarch64|arm64", "arm64"), (r"arm.*", "arm"), (r"s390x?", "s390"),
    (r"ppc64(le)?|powerpc.*", "powerpc"), (r"mips.*", "mips"), (r"riscv(32|64)", "riscv"),
    (r"loongarch(32|64)", "loongarch"), (r"sparc.*", "sparc"), (r"arc", "arc"),
)


# -- the command line ----------------------------------------------------------------------------


def find_clang(clang: str | None = None) -> str:
    """The clang to run: the argument, else $EVSPEC_CLANG, else ``clang`` on PATH."""
    chosen = clang or os.environ.get("EVSPEC_CLANG") or "clang"
    found = shutil.which(chosen)
    if found is None:
        raise ObjectError(
            codes.NO_CLANG, f"clang not found: {chosen!r} is not an executable (or not on PATH)",
            perf_message="Error when compiling BPF scriptlet",
            help=("install clang (Debian/Ubuntu: apt-get install clang) or set EVSPEC_CLANG",))
    return found


def linux_version_code(release: str | None = None) -> int:
    """KERNEL_VERSION(a, b, c) of a release string such as ``6.18.44-foo`` (c capped at 255)."""
    text = platform.release() if release is None else release
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m is None:
        raise ObjectError(codes.COMPILE_FAILED,
                          f"cannot tell LINUX_VERSION_CODE from the kernel release {text!r}")
    a, b, c = int(m[1]), int(m[2]), int(m[3] or 0)
    return (a << 16) + (b << 8) + min(c, 255)


def arch_include_dir(root: Path = Path("/usr/include")) -> Path | None:
    """The multiarch include directory holding ``asm/types.h`` (``/usr/include/x86_64-linux-gnu``)."""
    triple = _MULTIARCH.get(platform.machine())
    if triple is None:
        return None
    path = root / triple
    return path if path.is_dir() else None


def bundled_include_dir() -> Path:
    """evspec's own headers (``uapi/linux/bpf.h``), shipped as package data of evspec.loader."""
    from importlib.resources import files

    path = Path(str(files("evspec.loader") / "include"))
    if not (path / "uapi" / "linux" / "bpf.h").is_file():
        raise ObjectError(codes.COMPILE_FAILED, f"evspec's bundled BPF headers are missing from {path}"
                          " (a broken installation)")
    return path


def target_arch(machine: str | None = None) -> str | None:
    """The kernel's name of the architecture ``machine`` (``uname -m``; default: this one's), as
    libbpf's bpf_tracing.h spells it in ``__TARGET_ARCH_<arch>`` (libbpf-bootstrap's Makefile
    mapping: x86_64 -> x86, aarch64 -> arm64, ...); None for one it does not know."""
    name = platform.machine() if machine is None else machine
    for pattern, arch in _TARGET_ARCH:
        if re.fullmatch(pattern, name):
            return arch
    return None


def _names_target_arch(flags: Sequence[str]) -> bool:
    """Whether the user's flags define a ``__TARGET_ARCH_`` themselves (``-D__TARGET_ARCH_arm64``,
    ``-D __TARGET_ARCH_arm64``)."""
    for i, flag in enumerate(flags):
        if flag == "-D":
            name = flags[i + 1] if i + 1 < len(flags) else ""
        else:
            name = flag[2:] if flag.startswith("-D") else ""
        if name.startswith("__TARGET_ARCH_"):
            return True
    return False


def compile_flags(extra_flags: Sequence[str] = ()) -> list[str]:
    """The full flag list for one compile, without input, output and dependency options:
    perf's, ``-D__TARGET_ARCH_<arch>`` of this machine (unless ``extra_flags`` define one), the
    include directories, then ``extra_flags`` (the user's ``--clang-opt``)."""
    flags = ["-target", "bpf", "-O2", "-g", "-D__KERNEL__", f"-D__NR_CPUS__={possible_cpus()}",
             f"-DLINUX_VERSION_CODE={linux_version_code()}", "-Wno-unused-value",
             "-Wno-pointer-sign"]
    arch = target_arch()
    if arch is not None and not _names_target_arch(extra_flags):
        flags.append(f"-D__TARGET_ARCH_{arch}")
    include = arch_include_dir()
    if include is not None:
        flags.append(f"-I{include}")
    flags.append(f"-I{bundled_include_dir()}")
    flags.extend(extra_flags)
    return flags


def _run_clang(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """The one place clang runs (tests count the calls)."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ObjectError(codes.NO_CLANG, f"cannot run {argv[0]}: {exc.strerror or exc}",
                          perf_message="Error when compiling BPF scriptlet") from None


def clang_version(clang: str) -> str:
    proc = _run_clang([clang, "--version"])
    if proc.returncode != 0:
        raise ObjectError(codes.NO_CLANG, f"{clang} --version failed (exit {proc.returncode})",
                          detail=proc.stderr)
    return proc.stdout


# -- the cache -----------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    return Path(user_cache.cache_root()) / "bpf"


def cache_refusal(cache_dir: Path) -> str | None:
    """Why ``cache_dir`` must not be used as a compile cache, or None when it is safe
    (``user_cache.refusal``: a real directory of the current user that group and others cannot
    write, in a parent that others cannot rename it out of)."""
    return user_cache.refusal(str(cache_dir))


def _open_cache(cache_dir: Path | None) -> Path | None:
    path = default_cache_dir() if cache_dir is None else Path(cache_dir)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        reason: str | None = f"cannot create {path}: {exc.strerror or exc}"
    else:
        reason = cache_refusal(path)
    if reason is not None:
        log.warning("%s: not using the BPF compile cache: %s", codes.CACHE_REFUSED, reason)
        return None
    return path


def _usable_file(path: Path) -> bool:
    return user_cache.usable_file(str(path))


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a make-style dependency file as clang writes it with ``-MD -MF``."""
    joined = re.sub(r"\\\r?\n", " ", text)
    _target, sep, rest = joined.partition(": ")
    if not sep:
        return []
    deps, word, i = [], [], 0
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest) and rest[i + 1] in " #\\":
            word.append(rest[i + 1])
            i += 2
            continue
        if ch == "$" and rest[i + 1:i + 2] == "$":
            word.append("$")
            i += 2
            continue
        if ch.isspace():
            if word:
                deps.append("".join(word))
                word = []
        else:
            word.append(ch)
        i += 1
    if word:
        deps.append("".join(word))
    return deps


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def _object_key(base: str, headers: Sequence[str]) -> str | None:
    """The object's key from the manifest key and the current contents of its headers."""
    parts = [base.encode()]
    for header in headers:
        try:
            parts += [os.fsencode(header), Path(header).read_bytes()]
        except OSError:
            return None
    return _digest(*parts)


def _write_atomically(directory: Path, name: str, data: bytes) -> Path:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-" + name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        final = directory / name
        os.replace(tmp, final)
        return final
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- compile -------------------------------------------------------------------------------------


def compile_source(path: str | os.PathLike[str], *, clang: str | None = None,
                   extra_flags: Sequence[str] = (), cache_dir: Path | None = None) -> Path:
    """Compile a BPF C source into an object file and return the object's path.

    The object lives in the cache (``$XDG_CACHE_HOME/evspec/bpf`` or ``~/.cache/evspec/bpf``
    unless ``cache_dir`` is given); when the cache cannot be used safely, in a new private
    temporary directory removed when the process exits. clang's failure raises ``ObjectError`` with
    clang's messages in ``detail``.
    """
    source = Path(path).absolute()
    try:
        text = read_input(source, "BPF source")
    except ObjectError as exc:
        raise ObjectError(exc.code, exc.message.replace(str(source), os.fspath(path), 1),
                          perf_message=f"Failed to load {path} from source: Error when compiling "
                          "BPF scriptlet", help=exc.help) from None
    compiler = find_clang(clang)
    flags = compile_flags(extra_flags)
    cache = _open_cache(cache_dir)
    if cache is None:
        private = tempfile.mkdtemp(prefix="evspec-bpf-")
        atexit.register(shutil.rmtree, private, True)  # the object lives as long as the process
        output = Path(private) / (source.stem + ".o")
        _clang(compiler, flags, source, path, output, None)
        return output

    # The object keeps the source's name: data maps are named after it (maps.c -> maps.data).
    object_name = source.stem + ".o"
    base = _digest(CACHE_FORMAT, os.fsencode(compiler), clang_version(compiler).encode(),
                   "\0".join(flags).encode(), os.fsencode(source), text)
    manifest = cache / f"{base}.deps"
    if _usable_file(manifest):
        try:
            headers = json.loads(manifest.read_text())["headers"]
        except (OSError, ValueError, KeyError, TypeError):
            headers = None
        if isinstance(headers, list) and all(isinstance(h, str) for h in headers):
            key = _object_key(base, headers)
            if key is not None and _usable_file(cache / key / object_name):
                log.debug("BPF compile cache hit for %s: %s", source, cache / key / object_name)
                return cache / key / object_name

    fd, tmp_obj = tempfile.mkstemp(dir=cache, prefix=".tmp-", suffix=".o")
    os.close(fd)
    tmp_dep = tmp_obj + ".d"
    try:
        _clang(compiler, flags, source, path, Path(tmp_obj), Path(tmp_dep))
        headers = [h for h in parse_depfile(Path(tmp_dep).read_text()) if Path(h) != source]
        headers = [str(Path(h).absolute()) for h in headers]
        key = _object_key(base, headers)
        if key is None:
            raise ObjectError(codes.COMPILE_FAILED, f"{path}: a header clang read vanished while "
                              "compiling; try again")
        home = cache / key
        home.mkdir(mode=0o700, exist_ok=True)
        final = home / object_name
        os.replace(tmp_obj, final)
        _write_atomically(cache, manifest.name, json.dumps({"source": str(source),
                                                             "headers": headers}).encode())
        return final
    finally:
        Path(tmp_obj).unlink(missing_ok=True)
        Path(tmp_dep).unlink(missing_ok=True)


def _clang(compiler: str, flags: Sequence[str], source: Path, shown: str | os.PathLike[str],
           output: Path, depfile: Path | None) -> None:
    argv = [compiler, *flags]
    if depfile is not None:
        argv += ["-MD", "-MF", str(depfile)]
    argv += ["-c", str(source), "-o", str(output)]
    proc = _run_clang(argv)
    if proc.returncode != 0:
        first = next((line for line in proc.stderr.splitlines() if "error" in line), "")
        raise ObjectError(
            codes.COMPILE_FAILED,
            f"{shown}: clang failed (exit {proc.returncode})" + (f": {first}" if first else ""),
            perf_message=f"Failed to load {shown} from source: Error when compiling BPF scriptlet",
            detail=proc.stderr)
