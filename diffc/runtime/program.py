"""Building OpenCL programs, cached in memory and on disk.

The disk cache holds program binaries keyed by a hash of the source, the build options, the
device (platform, name, version, driver version) and the pyopencl version. Its folder is
`$DIFFC_CACHE_DIR`, else the user cache dir (`$XDG_CACHE_HOME/diffc` or `~/.cache/diffc`).
Each entry is written to a temporary file in the same folder and moved into place with
`os.replace`, so processes sharing the folder see either nothing or a whole binary.
A binary that fails to load is rebuilt from source (and rewritten).

PoCL compiles each kernel of a program for the CPU only when it first runs, and keeps what it
compiled in its own cache (`$POCL_CACHE_DIR`, else `~/.cache/pocl/kcache`), keyed by the source.
Asking it for the program's binary would compile every kernel of the program at once (all the
variants of an entry point: the MLP's learnGradient cost 140 s of CPU that way, of which its
first step runs one kernel). So on PoCL no binary is written when a program is built
(`keeps_binaries`): a second build of the same source is PoCL's cache hit, which still runs its
C preprocessor over the source (about a tenth of a second). A caller that knows a program is
built again and again (`diffc run` of a file unchanged since its last run) asks for its binary
with `keep_binary` once it has run; builds then load it (milliseconds), on PoCL too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
import warnings
from pathlib import Path

from diffc.runtime.device import DeviceInfo, device
from diffc.runtime.errors import BuildError
from diffc.stages import stage

_memory: dict[str, object] = {}
_lock = threading.Lock()
stats = {"memory_hits": 0, "disk_hits": 0, "builds": 0}


def cache_dir() -> Path | None:
    """Where program binaries are kept; None when disk caching is off (DIFFC_CACHE_DIR=off)."""
    env = os.environ.get("DIFFC_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "0", "off", "none"):
            return None
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diffc"


def program_key(source: str, options: tuple[str, ...], dev: DeviceInfo) -> str:
    import pyopencl

    h = hashlib.sha256()
    for part in (
        source,
        "\0".join(options),
        dev.platform,
        dev.name,
        dev.version,
        dev.driver_version,
        ".".join(map(str, pyopencl.VERSION)),
    ):
        h.update(part.encode())
        h.update(b"\x01")
    return h.hexdigest()


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def build_program(source: str, options: tuple[str, ...] = ()):
    """A built `pyopencl.Program` for `source` on the chosen device."""
    dev = device()
    key = program_key(source, options, dev)
    prg = _memory.get(key)
    if prg is not None:
        stats["memory_hits"] += 1
        return prg
    with _lock:
        prg = _memory.get(key)
        if prg is None:
            prg = _load_or_build(source, options, dev, key)
            _check_local_memory(prg, dev)
            _memory[key] = prg
    return prg


def check_work_group_memory(module) -> None:
    """Before building: a kernel of `module` (lowered) whose work-group memory (its groupshared
    arrays, `kernel.local_alloc`) exceeds the device's is an error, in the same words on every
    device (NVIDIA's compiler refuses such a program with a ptxas log; PoCL aborts at launch)."""
    check_work_group_bytes(work_group_memory(module))


def work_group_memory(module) -> dict[str, int]:
    """Kernel name -> the bytes of work-group memory its groupshared arrays take, for each kernel
    of `module` (lowered)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import IndexType

    from diffc.dialects import kernel

    out = {}
    for fn in module.ops:
        if not (isinstance(fn, func.FuncOp) and kernel.is_kernel(fn)):
            continue
        used = 0
        for op in fn.walk():
            if isinstance(op, kernel.LocalAllocOp):
                t = op.result.type
                el = t.element_type
                width = 64 if isinstance(el, IndexType) else el.bitwidth
                used += (width // 8) * max(1, t.element_count())
        out[fn.sym_name.data] = used
    return out


def check_work_group_bytes(used_by: dict[str, int]) -> None:
    """`check_work_group_memory` of what `work_group_memory` measured (kept by the module cache)."""
    limit = int(device().cl_device.local_mem_size)
    for name, used in used_by.items():
        if used > limit:
            raise BuildError(f"error: kernel '{name}' needs {used} bytes of work-group memory (its "
                             f"groupshared variables), more than the device's {limit} bytes")


def _check_local_memory(prg, dev: DeviceInfo) -> None:
    """A kernel whose work-group memory (groupshared arrays) exceeds the device's: an error here,
    where some drivers (PoCL) would abort the process at launch."""
    import pyopencl as cl

    limit = int(dev.cl_device.local_mem_size)
    for k in prg.all_kernels():
        used = int(k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, dev.cl_device))
        if used > limit:
            raise BuildError(f"error: kernel '{k.function_name}' needs {used} bytes of work-group memory (its "
                             f"groupshared variables), more than the device's {limit} bytes")


@contextlib.contextmanager
def _quiet_compiler():
    """A successful build's informational log (NVIDIA prints one for every program) is not news
    to a user; a failed build's log is shown by BuildError."""
    import pyopencl as cl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        yield


def keep_binary(source: str, options: tuple[str, ...] = ()) -> None:
    """Writes the binary of the program `build_program(source, options)` built to the disk cache,
    where no binary is kept there yet (on PoCL asking for it compiles the program's kernels that
    have not run: worth it only for a program that is built again and again)."""
    import pyopencl as cl

    dev = device()
    folder = cache_dir()
    key = program_key(source, options, dev)
    prg = _memory.get(key)
    if folder is None or prg is None:
        return
    path = folder / "programs" / f"{key}.bin"
    if path.is_file():
        return
    try:
        binaries = prg.get_info(cl.program_info.BINARIES)
        if binaries and binaries[0]:
            _write_atomically(path, bytes(binaries[0]))
    except (cl.Error, OSError):
        pass  # a cache we cannot write is only slower


def keeps_binaries(dev: DeviceInfo) -> bool:
    """Whether built programs' binaries go to the disk cache on this device: not on PoCL, which
    compiles a kernel when it first runs and caches it itself (see the module's docstring)."""
    return not dev.is_pocl


def _load_or_build(source: str, options: tuple[str, ...], dev: DeviceInfo, key: str):
    import pyopencl as cl

    folder = cache_dir()
    path = folder / "programs" / f"{key}.bin" if folder is not None else None
    if path is not None and path.is_file():
        try:
            binary = path.read_bytes()
            with _quiet_compiler():
                prg = cl.Program(dev.context, [dev.cl_device], [binary]).build(options=list(options))
            stats["disk_hits"] += 1
            return prg
        except (cl.Error, OSError):
            pass  # stale or damaged: rebuild below
    try:
        with _quiet_compiler(), stage(f"building the OpenCL program for {dev.cl_device.name.strip()}"):
            prg = cl.Program(dev.context, source).build(options=list(options), cache_dir=False)
    except cl.RuntimeError as e:
        log = _build_log(e, dev)
        raise BuildError(format_build_error(log, source), log=log, source=source) from None
    stats["builds"] += 1
    if path is not None and keeps_binaries(dev):
        try:
            binaries = prg.get_info(cl.program_info.BINARIES)
            if binaries and binaries[0]:
                _write_atomically(path, bytes(binaries[0]))
        except (cl.Error, OSError):
            pass  # a cache we cannot write is only slower
    return prg


def _build_log(e: Exception, dev: DeviceInfo) -> str:
    text = str(e)
    # pyopencl puts the per-device logs in the message after "Build on <device>:".
    m = re.search(r"Build on <[^>]*>:\s*(.*)", text, re.S)
    return (m.group(1) if m else text).strip()


# "<kernel>:2:10" (NVIDIA), "<source>:2:10", ".../tempfile_x.cl:2:10" (PoCL), "1:2:10:" at a
# line's start (Intel's CPU runtime: the file's number, then line and column)
_LINE_REF = re.compile(r"(?:<[^>\n]*>|\.cl|^):(\d+):(\d+)?|^\d+:(\d+):(\d+):", re.M)


def format_build_error(log: str, source: str, context: int = 1, kind: str = "opencl",
                       compiler: str = "OpenCL compiler") -> str:
    """The compiler log, then each generated source line it names, with its neighbours."""
    lines = source.splitlines()
    refs: list[tuple[int, int]] = []
    for m in _LINE_REF.finditer(log):
        line, column = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        ln = int(line)
        col = int(column) if column else 0
        if 1 <= ln <= len(lines) and (ln, col) not in refs:
            refs.append((ln, col))
    out = [f"error[{kind}-build]: the {compiler} rejected a generated program", "compiler log:"]
    out += ["    " + ln for ln in log.splitlines() if ln.strip()][:60]
    if refs:
        out.append("generated source:")
        for ln, col in refs[:10]:
            for k in range(max(1, ln - context), min(len(lines), ln + context) + 1):
                mark = ">" if k == ln else " "
                out.append(f"  {mark}{k:5d} | {lines[k - 1]}")
                if k == ln and col > 0:
                    out.append("         | " + " " * (col - 1) + "^")
    else:
        out.append("generated source:")
        out += [f"   {k:5d} | {t}" for k, t in enumerate(lines, 1)][:200]
    return "\n".join(out)


def clear_memory_cache() -> None:
    _memory.clear()
