"""Located error messages, the same shape for every part of diffc:

    file:line:col: error[CODE]: message
        the offending source line
        ^

`DiffcError` carries such a message; the command-line tools print it and exit non-zero,
without a Python traceback.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xdsl.utils.exceptions import PassFailedException

if TYPE_CHECKING:
    from xdsl.ir import Operation


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int  # 1-based
    col: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def format_diagnostic(
    loc: SourceLocation | None,
    message: str,
    code: str | None = None,
    source: str | None = None,
    length: int = 1,
    severity: str = "error",
) -> str:
    """The one-line header, then the source line with a caret under the column."""
    kind = f"{severity}[{code}]" if code else severity
    head = f"{loc}: {kind}: {message}" if loc else f"{kind}: {message}"
    if loc is None or source is None:
        return head
    lines = source.split("\n")  # as line_col counts: splitlines() also splits at \v, \f, \x1c...
    if not 1 <= loc.line <= len(lines):
        return head
    text = lines[loc.line - 1].removesuffix("\r")
    caret = " " * (loc.col - 1) + "^" * max(1, min(length, len(text) - loc.col + 1))
    return f"{head}\n    {text}\n    {caret}"


class DiffcError(Exception):
    """A user-facing error whose message is already a complete diagnostic."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def op_location(op: Operation, enclosing: bool = False) -> SourceLocation | None:
    """Where `op` was written: the FileLineColLoc diffc-opt's parser or the front end gave it.
    With `enclosing`, an op a pass built (no location of its own) is placed at the nearest
    enclosing op that has one."""
    from xdsl.dialects.builtin import FileLineColLoc  # (kept out of `diffc version`'s imports)

    cur: Operation | None = op
    while cur is not None:
        loc = cur.location
        if isinstance(loc, FileLineColLoc):
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        cur = cur.parent_op() if enclosing else None
    return None


class PassError(PassFailedException):
    """A pass refusing the IR because of one op. Still a PassFailedException, so xDSL's driver
    and pass plugins handle it as any pass failure; `location` (where the op was written, or
    None) and `detail` (the message without it) let diffc's tools print the source line."""

    def __init__(self, detail: str, location: SourceLocation | None = None):
        super().__init__(f"{location}: {detail}" if location is not None else detail)
        self.detail = detail
        self.location = location


def pass_error(op: Operation | None, message: str) -> PassError:
    """The error a pass raises about `op` (None: about nothing in particular)."""
    return PassError(message, op_location(op, enclosing=True) if op is not None else None)


def failed_in_pass(name: str, e: PassFailedException) -> PassError:
    """`e`, raised by pass `name`, with a message that names the pass; its location is kept."""
    if isinstance(e, PassError):
        return PassError(f"pass '{name}' failed: {e.detail}", e.location)
    return PassError(f"pass '{name}' failed: {e}")


def _source_text(file: str, sources: Mapping[str, str] | None) -> str | None:
    if sources is not None and file in sources:
        return sources[file]
    try:  # the file itself, when the caller did not keep its text
        return decode_source(Path(file).read_bytes(), file)
    except (OSError, DiffcError, ValueError):
        return None


def render_error(e: BaseException, sources: Mapping[str, str] | None = None, prefix: str = "") -> str:
    """The diagnostic to print for `e`. An error with a `location` and a `detail` (PassError,
    the OpenCL emitter's errors) gets `file:line:col: error: prefix detail`, the source line
    and a caret; any other keeps its own text, with `error: ` in front where it has none."""
    loc = getattr(e, "location", None)
    detail = getattr(e, "detail", None)
    if isinstance(loc, SourceLocation) and isinstance(detail, str):
        return format_diagnostic(loc, prefix + detail, source=_source_text(loc.file, sources))
    if isinstance(e, DiffcError) and not prefix:
        return str(e)  # already a complete diagnostic
    if isinstance(detail, str):
        text = prefix + detail
    else:
        text = str(e)
        if prefix and not text.startswith("error"):
            text = prefix + text
    if text.startswith(("error", "/")) or ": error" in text:
        return text
    return f"error: {text}"


def decode_source(data: bytes, filename: str) -> str:
    """The text of a source file; bytes that are not UTF-8 are an error at the first of them."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = data[: e.start].decode("utf-8")
        line, col = line_col(good, len(good))
        raise DiffcError(format_diagnostic(
            SourceLocation(filename, line, col), f"the file is not UTF-8 text (byte 0x{data[e.start]:02x})",
            source=data.decode("utf-8", "replace"),
        )) from None


def read_source(path) -> str:
    """`decode_source` of the file at `path`."""
    return decode_source(Path(path).read_bytes(), str(path))


# -- warnings, which the module cache replays ---------------------------------------------------

_warning_recordings: list[list[str]] = []
_warnings_muted = 0


def print_warning(text: str) -> None:
    """Prints a warning diagnostic to stderr; an open `recording_warnings` keeps it too (a run
    from the module cache prints the warnings its compile printed: runtime/module_cache.py)."""
    import sys

    for kept in _warning_recordings:
        kept.append(text)
    if not _warnings_muted:
        print(text, file=sys.stderr)


@contextmanager
def recording_warnings(echo: bool = True) -> Iterator[list[str]]:
    """The warnings printed inside; with `echo` False they are kept but not printed (a compile
    made again only to locate an error, whose warnings were printed already)."""
    global _warnings_muted
    kept: list[str] = []
    _warning_recordings.append(kept)
    _warnings_muted += not echo
    try:
        yield kept
    finally:
        _warnings_muted -= not echo
        _warning_recordings.remove(kept)
