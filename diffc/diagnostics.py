"""Located error messages, the same shape for every part of diffc:

    file:line:col: error[CODE]: message
        the offending source line
        ^

`DiffcError` carries such a message; the command-line tools print it and exit non-zero,
without a Python traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


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
) -> str:
    """The one-line header, then the source line with a caret under the column."""
    kind = f"error[{code}]" if code else "error"
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
    from pathlib import Path

    return decode_source(Path(path).read_bytes(), str(path))
