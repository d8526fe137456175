"""The module cache: what `load_module` and calls computed for a module, kept on disk so that a
second process loading the unchanged module skips the front end and the passes.

Two kinds of entry, in `<cache dir>/modules/` (the program cache's folder, see program.py):

* `<key>.sig`: the signatures of the module's functions (`FunctionSignature`: parameter names,
  dtypes, which are differentiable, ...), all a `Module` needs until a kernel must be built.
  A module loaded from it parses its source only when the IR is wanted (`Module.ir`).
* `<key>-<spec>.cl`: the OpenCL C of one element-wise kernel (a `KernelSpec` of one function),
  or the module's compute entry points as the compiler built them (a `KernelProgram`: the
  OpenCL C and what dispatch needs to bind their arguments), for one `KernelSettings` (the
  kernel pipeline's settings, diffc/pipeline.py: device atomics, checks, accumulation, group
  sizes); the binary is then found in the program cache.
* `<key>-<settings>.cl` too: `diffc run FILE`'s RunPlan, what the run of an unchanged file
  needs to launch without compiling (the entry point, its KernelProgram, its work-group memory
  and the warnings the compile printed, printed again). Its first key also holds the file's
  absolute path and the options that change the compile (--entry, --conformance, DIFFC_VERIFY,
  and --groups and --slang-data, which choose the form of the kernel the program holds); the
  settings hold --device, --check and --set. A run that fails before its program is built
  (an annotation that does not bind) keeps nothing; one that fails later (a bounds error) fails
  the same way from the cache.

`<key>` hashes a format number, diffc's version, a fingerprint of diffc's installed files (so
an edited diffc never reads an older diffc's results) and of the site-packages folders on
sys.path (so installing or upgrading a plugin package starts afresh), the pass pipelines, and
the name and text of the file loaded and the front end's options, then the hash of every other
file the front end read to make the module (`#include`, `import`, `implementing`, diffc's library
modules) and every path a search for one tried before the file it found
(frontend/source/files_read.py). Those files are known only once the module is made: a third
kind of entry, `<first key>.deps`, keyed without them, lists them; a load hashes each as it is
now and looks for the module under the whole key, so an edited imported file is a miss (and the
kernels, keyed by the module's key, are rebuilt too). A plugin edited in place (an editable install) is not seen:
clear the folder, or set `DIFFC_MODULE_CACHE=0` while developing one. Entries are written whole
to a temporary file and moved into place (`os.replace`), so processes sharing the folder see a
whole entry or none; an entry that cannot be read is ignored and rewritten.
`DIFFC_MODULE_CACHE=0` turns this off (so does `DIFFC_CACHE_DIR=off`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IndexType, IntegerType

FORMAT = 5  # the layout of the entries (2: entry programs keep their accumulate-gradients plans; 3: api;
# 4: entry programs are the compiler's KernelPrograms, keyed by the KernelSettings; 5: the files read, .deps)
stats = {"hits": 0, "misses": 0, "kernel_hits": 0, "kernel_misses": 0, "run_hits": 0, "run_misses": 0}


def np_dtype(t) -> np.dtype | None:
    """The numpy dtype of a scalar IR type that calls over tensors pass, else None."""
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType) and t.width.data in (32, 64):
        return np.dtype(np.int32 if t.width.data == 32 else np.int64)
    return None


@dataclass(frozen=True)
class FunctionSignature:
    """What a `Function` knows about its op without the IR."""

    name: str
    params: tuple[str, ...]
    param_types: tuple[str, ...]  # printed IR types, for messages
    dtypes: tuple[np.dtype | None, ...]
    result_types: tuple[str, ...]
    result_dtype: np.dtype | None  # of the one result, else None
    differentiable: bool
    diffable: tuple[bool, ...]
    is_entry: bool
    api: str = ""  # the Slang-level signature as JSON (diffc.api, see runtime/layouts.py)


def signature_of(op) -> FunctionSignature:
    from diffc.dialects import diff
    from diffc.kernel_program import is_compute_entry

    args = op.body.blocks[0].args if op.body.blocks else ()
    ins = op.function_type.inputs.data
    outs = op.function_type.outputs.data
    from diffc.runtime.layouts import describe_ir

    n = len(ins)
    params = tuple((args[i].name_hint if i < len(args) and args[i].name_hint else f"arg{i}") for i in range(n))
    api = op.attributes.get("diffc.api")
    return FunctionSignature(
        name=op.sym_name.data,
        params=params,
        param_types=tuple(str(t) for t in ins),
        dtypes=tuple(np_dtype(t) for t in ins),
        result_types=tuple(str(t) for t in outs),
        result_dtype=np_dtype(outs[0]) if len(outs) == 1 else None,
        differentiable=diff.is_differentiable_func(op),
        diffable=tuple(diff.arg_is_differentiable(op, i) for i in range(n)),
        is_entry=is_compute_entry(op),
        api=api.data if api is not None else describe_ir(op, list(params)),
    )


# -- keys ---------------------------------------------------------------------------------------


def folder() -> Path | None:
    """Where module entries live; None when the cache is off."""
    if os.environ.get("DIFFC_MODULE_CACHE", "1").strip() == "0":
        return None
    from diffc.runtime.program import cache_dir

    base = cache_dir()
    return None if base is None else base / "modules"


_fingerprint: str | None = None


def diffc_fingerprint() -> str:
    """diffc's version and the size and modification time of each of its Python files (a stat
    per file, once per process): results of another diffc are never read."""
    global _fingerprint
    if _fingerprint is None:
        import diffc

        h = hashlib.sha256(diffc.__version__.encode())
        roots = {Path(diffc.__file__).parent}
        for sub in ("dialects", "passes", "tools"):  # installed under diffc.* from other folders
            spec = importlib.util.find_spec(f"diffc.{sub}")  # (finds without importing)
            if spec is not None and spec.submodule_search_locations:
                roots.add(Path(next(iter(spec.submodule_search_locations))))
        for root in sorted(roots):
            for p in sorted(root.rglob("*.py")):
                st = p.stat()
                h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\1".encode())
        # installing, upgrading or removing a package (a plugin among them) changes the listing
        # of site-packages, and so its modification time (other sys.path folders, such as the
        # working directory, change for reasons of their own)
        for entry in sys.path:
            if Path(entry).name not in ("site-packages", "dist-packages"):
                continue
            try:
                h.update(f"{entry}\0{os.stat(entry or '.').st_mtime_ns}\1".encode())
            except OSError:
                pass
        _fingerprint = h.hexdigest()
    return _fingerprint


def module_key(sources: dict[str, str]) -> str | None:
    """The key of a module made from `sources` (file name -> text); None when the cache is off.
    (Cheap: it imports nothing, not even diffc's registry, which alone costs more than a cached load.)"""
    if folder() is None:
        return None
    from diffc.pipeline import AD_PIPELINE, KERNEL_PIPELINE

    h = hashlib.sha256()
    for part in (str(FORMAT), diffc_fingerprint(), ",".join(AD_PIPELINE), ",".join(s.name for s in KERNEL_PIPELINE)):
        h.update(part.encode())
        h.update(b"\1")
    for name in sorted(sources):
        h.update(name.encode())
        h.update(b"\0")
        h.update(sources[name].encode())
        h.update(b"\1")
    return h.hexdigest()


def with_dependencies(key: str | None, files: dict[str, str]) -> str | None:
    """The key of module `key` made also from `files` (path -> content hash, as
    frontend/source/files_read.py records them)."""
    if key is None or not files:
        return key
    h = hashlib.sha256(key.encode())
    for path in sorted(files):
        h.update(f"\1{path}\0{files[path]}".encode())
    return h.hexdigest()


def load_dependencies(key: str | None) -> dict[str, str] | None:
    """The files module `key` was last made from, hashed as they are now; None when unknown."""
    value = _read(f"{key}.deps") if key is not None else None
    if not (isinstance(value, list) and all(isinstance(p, str) for p in value)):
        if key is not None:
            stats["misses"] += 1  # (no module is looked for)
        return None
    if not value:  # (a module of one file: the front end, which importing files_read loads, is not needed)
        return {}
    from diffc.frontend.source.files_read import current_hash

    return {p: current_hash(p) for p in value}


def store_dependencies(key: str | None, files: dict[str, str]) -> None:
    if key is not None:
        _write(f"{key}.deps", sorted(files))


# -- entries ------------------------------------------------------------------------------------


def _read(name: str):
    base = folder()
    if base is None:
        return None
    try:
        with open(base / name, "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # damaged or from an incompatible Python: rebuilt and rewritten
        return None


def _write(name: str, value) -> None:
    from diffc.runtime.program import _write_atomically

    base = folder()
    if base is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (TypeError, AttributeError, pickle.PicklingError):
        return  # it holds device objects (a kernel's status buffers): built again next time
    try:
        _write_atomically(base / name, data)
    except OSError:
        pass  # a cache we cannot write is only slower


def load_signatures(key: str | None) -> dict[str, FunctionSignature] | None:
    if key is None:
        return None
    value = _read(f"{key}.sig")
    ok = isinstance(value, dict) and all(isinstance(v, FunctionSignature) for v in value.values())
    stats["hits" if ok else "misses"] += 1
    return value if ok else None


def store_signatures(key: str | None, signatures: dict[str, FunctionSignature]) -> None:
    if key is not None:
        _write(f"{key}.sig", signatures)


def kernel_key(key: str | None, spec, settings) -> str | None:
    """The entry name of the kernels `spec` names (one element-wise kernel's KernelSpec, or "entry
    points") built under `settings` (a KernelSettings: what the build depends on besides the
    module); None when the module has no key."""
    if key is None:
        return None
    return f"{key}-{hashlib.sha256(repr((spec, settings)).encode()).hexdigest()[:32]}.cl"


def load_kernel_source(name: str | None) -> str | None:
    if name is None:
        return None
    value = _read(name)
    ok = isinstance(value, str)
    stats["kernel_hits" if ok else "kernel_misses"] += 1
    return value if ok else None


def store_kernel_source(name: str | None, source: str) -> None:
    if name is not None:
        _write(name, source)


def load_entry_program(name: str | None):
    """A module's compute entry points as the compiler built them (a KernelProgram), or None."""
    if name is None:
        return None
    from diffc.kernel_program import KernelProgram

    value = _read(name)
    ok = isinstance(value, KernelProgram)
    stats["kernel_hits" if ok else "kernel_misses"] += 1
    return value if ok else None


def store_entry_program(name: str | None, value) -> None:
    if name is not None:
        _write(name, value)


# -- diffc run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunPlan:
    """What `diffc run FILE` compiled, all a second run of the unchanged file needs to launch:
    the entry point chosen, its [numthreads], the compiler's KernelProgram, each kernel's
    work-group memory (checked against the device at each run), the warnings the compile
    printed (printed again) and the buffers that are (RW)ByteAddressBuffers (filled as bytes)."""

    entry: str
    numthreads: tuple[int, int, int]
    program: object  # a KernelProgram
    work_group_bytes: dict[str, int]
    warnings: tuple[str, ...] = ()
    byte_address: frozenset = frozenset()


def run_key(path: str, text: str, options) -> str | None:
    """The first key of `diffc run`'s compile of file `path` holding `text` under `options` (the
    command line's entry and conformance options: what the compile reads besides the files);
    None when the cache is off. The file's absolute path is part of it: the files it imports are
    searched for from there."""
    return module_key({path: text, "\0diffc run": repr((os.path.abspath(path), options))})


def load_run_plan(name: str | None) -> RunPlan | None:
    if name is None:
        return None
    value = _read(name)
    ok = isinstance(value, RunPlan)
    stats["run_hits" if ok else "run_misses"] += 1
    return value if ok else None


def store_run_plan(name: str | None, plan: RunPlan) -> None:
    if name is not None:
        _write(name, plan)
