"""Preprocessing tokens of one logical line (physical lines joined at backslash-newlines), each
with the physical line and column it starts at, so rebuilt lines still map to their source."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from diffc.frontend.source.lexer import PUNCT

PP_PUNCT = sorted({*PUNCT, "##", "#", "..."}, key=len, reverse=True)
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Expansion:
    """The macro call (first and last character, 1-based) that a token was expanded from."""

    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class PPToken:
    kind: str  # "id", "num", "str", "chr", "punct", "comment" (a /* */ block), "other"
    text: str
    line: int  # where the token starts in its file (1-based); for `expansion` tokens, unused
    col: int
    space_before: bool = False
    hide: frozenset[str] = frozenset()  # macros that must not expand this token again
    expansion: Expansion | None = None  # set for tokens a macro produced
    end_line: int = 0  # the token's last character (for the end of a macro call)
    end_col: int = 0

    def with_(self, **kw) -> PPToken:
        return replace(self, **kw)


@dataclass
class LogicalLine:
    """Physical lines `first`..`last` (0-based indices) joined at backslash-newlines."""

    text: str
    first: int
    last: int
    # (offset in text, 1-based physical line, 0-based column there) at each joined line's start
    starts: list[tuple[int, int, int]] = field(default_factory=list)

    def position(self, offset: int) -> tuple[int, int]:
        for start, line, col0 in reversed(self.starts):
            if start <= offset:
                return line, col0 + offset - start + 1
        raise AssertionError(offset)


def logical_line(lines: list[str], i: int) -> LogicalLine:
    """The logical line that starts at physical line i (a trailing backslash joins the next)."""
    parts, starts, offset, j = [], [], 0, i
    while True:
        text = lines[j].removesuffix("\r")
        starts.append((offset, j + 1, 0))
        if text.endswith("\\") and j + 1 < len(lines):
            parts.append(text[:-1])
            offset += len(text) - 1
            j += 1
            continue
        parts.append(lines[j])
        return LogicalLine("".join(parts), i, j, starts)


def tokenize(line: LogicalLine, in_comment: bool) -> tuple[list[PPToken], bool]:
    """The tokens of `line`, starting inside a /* */ comment when `in_comment`; and whether the
    line ends inside one. Never fails: an unterminated string ends at the line's end (the lexer
    reports it where the text survives; in a skipped `#if 0` group it is nothing)."""
    text, toks, i, n = line.text, [], 0, len(line.text)
    space = False

    def add(kind: str, j: int) -> None:
        nonlocal space
        ln, col = line.position(i)
        end_ln, end_col = line.position(max(i, j - 1))
        toks.append(PPToken(kind, text[i:j], ln, col, space, end_line=end_ln, end_col=end_col))
        space = False

    if in_comment:
        j = text.find("*/")
        end = n if j < 0 else j + 2
        add("comment", end)
        i = end
        if j < 0:
            return toks, True
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v":
            space = True
            i += 1
        elif text.startswith("//", i):
            break
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            end = n if j < 0 else j + 2
            add("comment", end)
            i = end
            if j < 0:
                return toks, True
            space = True
        elif (m := _IDENT.match(text, i)) is not None:
            add("id", m.end())
            i = m.end()
        elif (m := _NUMBER.match(text, i)) is not None:
            add("num", m.end())
            i = m.end()
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            add("str" if c == '"' else "chr", j)
            i = j
        else:
            p = next((p for p in PP_PUNCT if text.startswith(p, i)), None)
            j = i + (len(p) if p else 1)
            add("punct" if p else "other", j)
            i = j
    return toks, False


def spell(toks: list[PPToken]) -> str:
    """Tokens as text, a space where the source had white space (for `#x` and `#include <x>`)."""
    return "".join((" " if t.space_before and k else "") + t.text for k, t in enumerate(toks))


def retokenize(text: str, like: PPToken) -> list[PPToken]:
    """The tokens of `text` (the result of `##`), placed where `like` is."""
    toks, _ = tokenize(LogicalLine(text, 0, 0, [(0, like.line, like.col - 1)]), False)
    return [t.with_(hide=like.hide, expansion=like.expansion, space_before=like.space_before and k == 0)
            for k, t in enumerate(toks)]
