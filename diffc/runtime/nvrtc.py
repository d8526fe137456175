"""CUDA C (the emitter's CUDA target) -> a CUDA binary, by NVRTC through the maintained bindings
(`cuda.bindings.nvrtc`; libnvrtc comes with torch's CUDA packages), cached on disk like OpenCL
programs (program.py's folder and write-then-rename): the key hashes the source, the options
and NVRTC's version. `arch` is "sm_90" (a cubin for that GPU) or "compute_90" (PTX, which the
driver compiles for its GPU when the module is loaded). No GPU is needed to compile.

`unavailable()` says why NVRTC cannot run here (None: it can)."""

from __future__ import annotations

import hashlib
import threading

from diffc.runtime.errors import BuildError

# -default-device: functions without an execution space are device functions (the emitter's
# helpers); -std=c++17 for the prelude's overloads
OPTIONS = ("--device-as-default-execution-space", "-std=c++17")

_memory: dict[str, bytes] = {}
_lock = threading.Lock()
stats = {"memory_hits": 0, "disk_hits": 0, "builds": 0}
_why: list = []


def unavailable() -> str | None:
    """Why NVRTC cannot compile here (None: it can)."""
    if not _why:
        try:
            from cuda.bindings import nvrtc

            err, major, minor = nvrtc.nvrtcVersion()
            _why.append(None if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else f"nvrtcVersion: {err.name}")
        except ImportError:
            _why.append("the CUDA bindings are not installed: pip install cuda-bindings")
        except Exception as e:  # (RuntimeError / OSError: libnvrtc is missing)
            _why.append(f"libnvrtc cannot be loaded ({e}); it comes with torch's CUDA packages (nvidia-cuda-nvrtc)")
    return _why[0]


def _version() -> str:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def _check(res, what: str):
    from cuda.bindings import nvrtc

    err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise BuildError(f"error: NVRTC {what}: {err.name}")
    return rest[0] if len(rest) == 1 else rest


def key(source: str, arch: str, options: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    for part in ("nvrtc", source, arch, "\0".join(OPTIONS + options), _version()):
        h.update(part.encode())
        h.update(b"\x01")
    return h.hexdigest()


def compile_cuda(source: str, arch: str, name: str = "diffc.cu", options: tuple[str, ...] = ()) -> bytes:
    """The cubin (arch "sm_XX") or PTX ("compute_XX") of `source`; a BuildError with NVRTC's log
    (and the lines it names) when it does not compile."""
    why = unavailable()
    if why is not None:
        raise BuildError(f"error: NVRTC cannot run here: {why}")
    k = key(source, arch, options)
    got = _memory.get(k)
    if got is not None:
        stats["memory_hits"] += 1
        return got
    with _lock:
        got = _memory.get(k)
        if got is None:
            got = _memory[k] = _load_or_compile(source, arch, name, options, k)
    return got


def _load_or_compile(source: str, arch: str, name: str, options: tuple[str, ...], k: str) -> bytes:
    from diffc.runtime.program import _write_atomically, cache_dir

    folder = cache_dir()
    path = None if folder is None else folder / "cuda" / (k + (".cubin" if arch.startswith("sm_") else ".ptx"))
    if path is not None:
        try:
            data = path.read_bytes()
            if data:
                stats["disk_hits"] += 1
                return data
        except OSError:
            pass
    data = _compile(source, arch, name, options)
    stats["builds"] += 1
    if path is not None:
        try:
            _write_atomically(path, data)
        except OSError:
            pass
    return data


def _compile(source: str, arch: str, name: str, options: tuple[str, ...]) -> bytes:
    from cuda.bindings import nvrtc

    from diffc.runtime.program import format_build_error

    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "create")
    try:
        opts = [o.encode() for o in (f"--gpu-architecture={arch}", *OPTIONS, *options)]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
            log = b" " * size
            _check(nvrtc.nvrtcGetProgramLog(prog, log), "log")
            text = log.decode(errors="replace").rstrip("\0").strip()
            raise BuildError(f"error: NVRTC could not compile the CUDA C of diffc's kernels:\n"
                             f"{format_build_error(text, source, kind='cuda', compiler='NVRTC')}")
        if arch.startswith("sm_"):
            size = _check(nvrtc.nvrtcGetCUBINSize(prog), "cubin size")
            data = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(prog, data), "cubin")
        else:
            size = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
            data = b" " * size
            _check(nvrtc.nvrtcGetPTX(prog, data), "PTX")
        return bytes(data)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
