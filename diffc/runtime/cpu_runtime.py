"""Makes the Intel CPU OpenCL runtime that pip installed (the `intel-opencl-rt` wheel) visible
to the OpenCL ICD loader, so that `pip install diffc` alone gives a CPU device on any x86-64 Linux.

The PoCL that pip brings (pocl-binary-distribution, LLVM 14) cannot compile for CPUs newer than
its LLVM ("unknown target CPU 'generic'", e.g. recent AMD EPYC), and nothing at run time can
change the CPU it targets. The Intel runtime's wheel ships no usable ICD file (its
`etc/OpenCL/vendors/intel-cpu.icd` names a placeholder path), so the loader never finds it.

The loader reads its vendor folder once, at the process's first OpenCL call; before that, this
module points `OCL_ICD_VENDORS` at a folder holding the ICD files the loader would have read
(`OCL_ICD_VENDORS` or `OPENCL_VENDOR_PATH` or /etc/OpenCL/vendors) plus one for the installed
runtime. Nothing is hidden: a GPU's ICD stays listed. A user who set `OCL_ICD_VENDORS` to a
library file (one ICD, by choice) is left alone, as is a process with no such wheel.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

_LIBRARY = "libintelocl.so"
_ICD_NAME = "diffc-intel-cpu.icd"
_registered = False


def installed_library() -> Path | None:
    """The Intel CPU runtime library pip installed, or None (not installed, or not found)."""
    from importlib import metadata

    try:
        files = metadata.files("intel-opencl-rt") or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name == _LIBRARY:
            path = Path(f.locate()).resolve()
            if path.is_file():
                return path
    return None


def _vendor_files(folder: str) -> list[tuple[str, bytes]]:
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for name in entries:
        if name.endswith(".icd") and name != _ICD_NAME:
            try:
                out.append((name, Path(folder, name).read_bytes()))
            except OSError:
                continue
    return out


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diffc" / "opencl-vendors"


def _write_folder(files: list[tuple[str, bytes]]) -> Path | None:
    """A folder holding exactly `files`, named by their hash (an existing one is reused)."""
    digest = hashlib.sha256(repr(files).encode()).hexdigest()[:16]
    for root in (_cache_root(), Path(tempfile.gettempdir()) / f"diffc-{os.getuid()}" / "opencl-vendors"):
        target = root / digest
        if target.is_dir():
            return target
        try:
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=root, prefix=".new-"))
            for name, data in files:
                (staging / name).write_bytes(data)
            try:
                staging.rename(target)
            except OSError:  # another process made it first
                for name, _ in files:
                    (staging / name).unlink(missing_ok=True)
                staging.rmdir()
            if target.is_dir():
                return target
        except OSError:
            continue
    return None


def register() -> bool:
    """Adds the pip-installed Intel CPU runtime to the ICD loader's vendor folder for this
    process (call before the first OpenCL call). True where it was added."""
    global _registered
    if _registered:
        return True
    library = installed_library()
    if library is None:
        return False
    current = os.environ.get("OCL_ICD_VENDORS", "")
    if current and not os.path.isdir(current):
        return False  # one library named by the user: their choice
    base = current or os.environ.get("OPENCL_VENDOR_PATH", "") or "/etc/OpenCL/vendors"
    files = _vendor_files(base)
    if any(data.strip() == str(library).encode() for _, data in files):
        _registered = True
        return True
    folder = _write_folder(files + [(_ICD_NAME, f"{library}\n".encode())])
    if folder is None:
        return False
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    _registered = True
    return True
