"""Which files a compilation read, for the module cache (runtime/module_cache.py): a module made
from several files (`#include`, `import`, `implementing`, diffc's library modules) is stale when
any of them changes, and also when a file appears where a search looked before the one it found
(it would be found instead).

`recording()` collects, while it is open, each path the front end read (the hash of the text it
read) and each path a search tried and did not find (`MISSING`). Reading sites call `read` and
`missing`; with no recording open they do nothing."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager

MISSING = "missing"  # the "hash" of a path a search tried that held no file

_open: list[dict[str, str]] = []


@contextmanager
def recording() -> Iterator[dict[str, str]]:
    """path -> the sha256 of the text read there (or MISSING), for what is read inside."""
    files: dict[str, str] = {}
    _open.append(files)
    try:
        yield files
    finally:
        _open.remove(files)


def text_hash(text: str) -> str:
    # (line ends as one: some readers open files in text mode, which turns "\r\n" into "\n")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def read(path: str, text: str) -> None:
    if _open and not path.startswith("<"):
        digest = text_hash(text)
        for files in _open:
            files[os.path.abspath(path)] = digest


def missing(path: str) -> None:
    if _open:
        for files in _open:
            files.setdefault(os.path.abspath(path), MISSING)


def current_hash(path: str) -> str:
    """What `read` / `missing` would record for `path` now (a file that cannot be read as UTF-8
    text counts as changed: its entry never matches)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return MISSING
    except OSError:
        return "unreadable"
    try:
        return text_hash(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "not utf-8"
