"""Where each character of the preprocessed text came from.

The preprocessor (preprocess.py) keeps line structure: every output line comes from one line of
one source file (an included file's lines are output lines of their own; a removed line is an
empty one). Most output lines are copies of their source line, so a column is the same column
there. A line where a macro was expanded, or that joins several source lines (a backslash
continuation, a macro call whose arguments run over lines), is rebuilt from tokens: it carries
`Piece`s that say where each stretch of it came from. The lexer and parser only see offsets into
the output text; `SourceMap.location` turns one into `file:line:col` of the original file.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from diffc.diagnostics import SourceLocation


@dataclass(frozen=True)
class Piece:
    """Output columns from `out_col` on (0-based) came from `line`:`col` (1-based) of the line's
    file. `copied`: a token copied from there (columns advance together); otherwise text a macro
    expanded to, all of which stands for the macro call from `line:col` to `end_line:end_col`."""

    out_col: int
    line: int
    col: int
    copied: bool
    end_line: int = 0
    end_col: int = 0


@dataclass(frozen=True)
class LineOrigin:
    file: str
    line: int  # 1-based line in `file` of the output line's start
    pieces: tuple[Piece, ...] = ()  # empty: the output line is a copy of that source line


class SourceMap:
    def __init__(self, text: str, origins: list[LineOrigin], sources: dict[str, str]):
        self.text = text
        self.origins = origins
        self.sources = sources  # file name -> its text, for the source line under a diagnostic
        self.line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        assert len(self.line_starts) == len(origins)

    @classmethod
    def plain(cls, text: str, filename: str) -> SourceMap:
        """The map of text that no preprocessor touched: every line is itself."""
        n = text.count("\n") + 1
        return cls(text, [LineOrigin(filename, k + 1) for k in range(n)], {filename: text})

    def location(self, offset: int, end: bool = False) -> SourceLocation:
        """file:line:col of the character at `offset` of the output text. Inside a macro's
        expansion that is the macro call's first character (its last one with `end`)."""
        k = bisect.bisect_right(self.line_starts, offset) - 1
        origin = self.origins[k]
        col = offset - self.line_starts[k]  # 0-based, in the output line
        if not origin.pieces:
            return SourceLocation(origin.file, origin.line, col + 1)
        i = bisect.bisect_right([p.out_col for p in origin.pieces], col) - 1
        if i < 0:  # the indentation before the first token, copied from the first source line
            return SourceLocation(origin.file, origin.line, col + 1)
        p = origin.pieces[i]
        if p.copied:
            return SourceLocation(origin.file, p.line, p.col + col - p.out_col)
        if end:
            return SourceLocation(origin.file, p.end_line, p.end_col)
        return SourceLocation(origin.file, p.line, p.col)

    def source(self, file: str) -> str | None:
        return self.sources.get(file)
