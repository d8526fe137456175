"""The C-style preprocessor Slang programs use, run before the lexer:

    pre = preprocess(text, "a.slang")      # pre.text for the lexer, pre.source_map for locations

`#define` (object- and function-like, `#`, `##`, `...`), `#undef`, `#if #ifdef #ifndef #elif
#else #endif` (integer expressions, `defined`), `#include "file"` (next to the including file,
then `include_dirs`), `#pragma once`, `#error`. Other `#pragma`s, `#line` and `#warning` are
accepted and have no effect; any other directive is E0008.

The output keeps line structure (source_map.py): a removed line (a directive, a line of a group
that `#if` leaves out) becomes an empty line, an included file's lines come in place of its
`#include`, a macro's expansion stays on the line of its call. So every token of the output maps
back to its file, line and column.

For other parts of the front end that read sibling files (`import`): `find_include(name,
including_file)` resolves a name the way `#include "name"` does, `read_include` also reads it,
`preprocess(text, path)` preprocesses it into a `Preprocessed` whose map names that file, and
`Preprocessed.join` puts several into one text for the lexer with every location kept.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from diffc.diagnostics import DiffcError, SourceLocation, format_diagnostic, read_source
from diffc.frontend.source import files_read
from diffc.frontend.errors import SYNTAX, UNDEFINED, UNSUPPORTED
from diffc.frontend.source.pp_macros import BUILTIN_MACROS, Macros, PPError, evaluate_condition, parse_define
from diffc.frontend.source.pp_tokens import LogicalLine, PPToken, logical_line, spell, tokenize
from diffc.frontend.source.source_map import LineOrigin, Piece, SourceMap

MAX_INCLUDE_DEPTH = 64
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Accepted and without effect: hints for other compilers, and `#line` (diagnostics name the
# real file and line, which is what a person opening the file sees).
IGNORED_DIRECTIVES = ("pragma", "line", "warning")


@dataclass(frozen=True)
class Preprocessed:
    text: str
    source_map: SourceMap

    @staticmethod
    def join(parts: Iterable[Preprocessed]) -> Preprocessed:
        """Several preprocessed files as one text (one after the other), locations kept."""
        parts = list(parts)
        text = "\n".join(p.text for p in parts)
        origins = [o for p in parts for o in p.source_map.origins]
        sources = {f: t for p in parts for f, t in p.source_map.sources.items()}
        return Preprocessed(text, SourceMap(text, origins, sources))


def preprocess(text: str, filename: str, defines: dict[str, str] | None = None,
               include_dirs: Iterable[str] = (), program_files: set[str] | None = None) -> Preprocessed:
    """`text` (the contents of `filename`) with its directives carried out and its macros
    expanded; a located `DiffcError` for a bad directive, an unterminated `#if`, a missing
    include or an `#error`. `defines`: macros defined beforehand (`-D name=value`).

    `program_files`: for a file of a program of several files, the real paths of the files whose
    declarations the program already holds (files it imported, and `#pragma once` files that
    another of its files included); this file's `#pragma once` files are added. An `#include` of
    one of them defines its macros and adds no lines, so a module's file compiled on its own that
    the module `#include`s, or a header two of its files include, is declared once."""
    p = _Preprocessor(Macros(defines), tuple(include_dirs), program_files or set())
    p.run_file(text, filename)
    if program_files is not None:
        program_files |= p.once
    out = "\n".join(p.lines)
    return Preprocessed(out, SourceMap(out, p.origins, p.sources))


def find_include(name: str, including_file: str, search_dirs: Iterable[str] = ()) -> str | None:
    """The path of file `name` as `#include "name"` in `including_file` finds it: next to that
    file (the current directory for a name like "<input>"), then in each of `search_dirs`."""
    if os.path.isabs(name):
        if os.path.isfile(name):
            return name
        files_read.missing(name)
        return None
    for d in (os.path.dirname(including_file), *search_dirs):
        path = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(path):
            return path
        files_read.missing(path)  # (a file made here later would be found instead)
    return None


def read_include(name: str, including_file: str, search_dirs: Iterable[str] = ()) -> tuple[str, str] | None:
    """(path, text) of the file `find_include` finds, or None when there is none. A file that is
    not UTF-8 is a located `DiffcError`; one that cannot be read, an OSError."""
    path = find_include(name, including_file, search_dirs)
    if path is None:
        return None
    text = read_source(path)
    files_read.read(path, text)
    return path, text


@dataclass
class _Conditional:
    """One open `#if` group: where it began, and which of its branches is taken."""

    at: PPToken  # the `#` of the #if, for "unterminated #if"
    outer_active: bool  # whether the text around the #if is kept
    taking: bool  # whether the current branch is kept
    taken: bool  # whether some branch so far was kept
    seen_else: bool = False


class _Preprocessor:
    def __init__(self, macros: Macros, include_dirs: tuple[str, ...], read_elsewhere: set[str]):
        self.macros = macros
        self.read_elsewhere = read_elsewhere  # (preprocess's program_files)
        self.include_dirs = include_dirs
        self.lines: list[str] = []
        self.origins: list[LineOrigin] = []
        self.sources: dict[str, str] = {}
        self.once: set[str] = set()  # files with `#pragma once`, by real path
        self.depth = 0

    # --- one file ---------------------------------------------------------------------------

    def run_file(self, text: str, filename: str) -> None:
        self.sources.setdefault(filename, text)
        lines = text.split("\n")  # as diagnostics count lines
        conds: list[_Conditional] = []
        in_comment = False
        i = 0
        while i < len(lines):
            raw = lines[i]
            if not in_comment and self._plain(raw):  # most lines: nothing to do, quickly
                if all(c.taking for c in conds):
                    self.lines.append(raw)
                    self.origins.append(LineOrigin(filename, i + 1))
                else:
                    self._blank(filename, i, i)
                i += 1
                continue
            ll = logical_line(lines, i)
            toks, ends_in_comment = tokenize(ll, in_comment)
            if not in_comment and _is_directive(toks):
                while ends_in_comment and ll.last + 1 < len(lines):  # a comment spans the directive on
                    nxt = logical_line(lines, ll.last + 1)
                    more, ends_in_comment = tokenize(nxt, True)
                    toks += more
                    ll = LogicalLine(ll.text, ll.first, nxt.last, ll.starts)
                try:
                    self._directive([t for t in toks if t.kind != "comment"], conds, filename)
                except PPError as e:
                    raise self._error(e, filename) from None
                # (after an included file's lines: the end of the text stays in the main file)
                self._blank(filename, ll.first, ll.last)
                in_comment, i = ends_in_comment, ll.last + 1
            elif not all(c.taking for c in conds):
                self._blank(filename, ll.first, ll.last)
                in_comment, i = ends_in_comment, ll.last + 1
            else:
                in_comment, i = self._code_line(lines, ll, toks, ends_in_comment, filename)
        if conds:
            raise self._error(PPError(SYNTAX, "unterminated #if (no #endif in this file)", conds[-1].at), filename)

    def _plain(self, raw: str) -> bool:
        """Whether a line (not inside a comment) is surely no directive, opens no comment, joins
        no next line and names no macro."""
        if "/*" in raw or raw.lstrip().startswith("#") or raw.rstrip("\r").endswith("\\"):
            return False
        names = _IDENT.findall(raw)
        return not any(n in self.macros.defs or n in BUILTIN_MACROS for n in names)

    def _code_line(self, lines: list[str], ll: LogicalLine, toks: list[PPToken], in_comment: bool,
                   filename: str) -> tuple[bool, int]:
        """Expands a line of code; a macro call's arguments may go on over the next lines.
        Returns the comment state after it and the next line to read."""
        last = ll.last

        def more() -> list[PPToken] | None:
            nonlocal last, in_comment
            if last + 1 >= len(lines):
                return None
            nxt = logical_line(lines, last + 1)
            nxt_toks, nxt_comment = tokenize(nxt, in_comment)
            if not in_comment and _is_directive(nxt_toks):
                return None
            last, in_comment = nxt.last, nxt_comment
            return nxt_toks

        try:
            out, changed = self.macros.expand(toks, filename, more)
        except PPError as e:
            raise self._error(e, filename) from None
        if not changed and last == ll.first:
            self.lines.append(lines[ll.first])
            self.origins.append(LineOrigin(filename, ll.first + 1))
        else:
            text, pieces = _render(out, lines[ll.first])
            self.lines.append(text)
            self.origins.append(LineOrigin(filename, ll.first + 1, tuple(pieces)))
            self._blank(filename, ll.first + 1, last)
        return in_comment, last + 1

    def _blank(self, filename: str, first: int, last: int) -> None:
        for k in range(first, last + 1):
            self.lines.append("")
            self.origins.append(LineOrigin(filename, k + 1))

    # --- directives -------------------------------------------------------------------------

    def _directive(self, toks: list[PPToken], conds: list[_Conditional], filename: str) -> None:
        hash_tok, rest = toks[0], toks[1:]
        if not rest:
            return  # `#` alone does nothing
        name, args = rest[0], rest[1:]
        active = all(c.taking for c in conds)
        if name.text in ("if", "ifdef", "ifndef"):
            taking = active and self._condition(name, args, filename)
            conds.append(_Conditional(hash_tok, active, taking, taking))
            return
        if name.text in ("elif", "else", "endif"):
            if not conds:
                raise PPError(SYNTAX, f"#{name.text} without #if", name)
            c = conds[-1]
            if name.text == "endif":
                conds.pop()
            elif c.seen_else:
                raise PPError(SYNTAX, f"#{name.text} after #else", name)
            elif name.text == "else":
                c.taking, c.taken, c.seen_else = c.outer_active and not c.taken, True, True
            else:  # a later branch's condition is not even evaluated once one was taken
                c.taking = c.outer_active and not c.taken and self._condition(name, args, filename)
                c.taken = c.taken or c.taking
            return
        if not active:
            return  # other directives in a group left out do nothing
        if name.text == "define":
            m = parse_define(args, name)
            self.macros.defs[m.name] = m
        elif name.text == "undef":
            if not args or args[0].kind != "id":
                raise PPError(SYNTAX, "#undef needs a macro name", args[0] if args else name)
            self.macros.defs.pop(args[0].text, None)
        elif name.text == "include":
            self._include(name, args, filename)
        elif name.text == "error":
            raise PPError(None, f"#error {spell(args)}".rstrip(), hash_tok)
        elif name.text == "pragma" and args and args[0].text == "once":
            self.once.add(_file_key(filename))
        elif name.text not in IGNORED_DIRECTIVES:
            raise PPError(UNSUPPORTED, f"preprocessor directive '#{name.text}' is not supported", name)

    def _condition(self, name: PPToken, args: list[PPToken], filename: str) -> bool:
        if name.text == "if" or name.text == "elif":
            return evaluate_condition(args, self.macros, filename, name) != 0
        if not args or args[0].kind != "id":
            raise PPError(SYNTAX, f"#{name.text} needs a macro name", args[0] if args else name)
        return (args[0].text in self.macros.defs) == (name.text == "ifdef")

    def _include(self, name: PPToken, args: list[PPToken], filename: str) -> None:
        if args and args[0].kind == "id":  # `#include MACRO`: the macro gives the file name
            args, _ = self.macros.expand(args, filename)
        if not args:
            raise PPError(SYNTAX, "#include needs a file name", name)
        at = args[0]
        if at.kind == "str" and len(at.text) >= 2 and at.text.endswith('"'):
            target = at.text[1:-1]
        elif at.text == "<" and any(t.text == ">" for t in args):
            close = next(k for k, t in enumerate(args) if t.text == ">")
            target = spell(args[1:close])
        else:
            raise PPError(SYNTAX, 'expected a file name ("file" or <file>) after #include', at)
        path = find_include(target, filename, self.include_dirs)
        if path is None:
            raise PPError(UNDEFINED, f"cannot open include file '{target}'", at)
        if _file_key(path) in self.once:
            return
        if self.depth >= MAX_INCLUDE_DEPTH:
            raise PPError(UNSUPPORTED, f"#include nested deeper than {MAX_INCLUDE_DEPTH} files "
                          "(a file that includes itself?) is not supported", at)
        try:
            _, text = read_include(target, filename, self.include_dirs)  # type: ignore[misc]
        except OSError as e:
            raise PPError(UNDEFINED, f"cannot open include file '{target}' ({e.strerror})", at) from None
        self.depth += 1
        first = len(self.lines)
        self.run_file(text, path)
        if _file_key(path) in self.read_elsewhere:  # its macros only: its declarations are there
            self.lines[first:] = [""] * (len(self.lines) - first)
        self.depth -= 1

    def _error(self, e: PPError, filename: str) -> DiffcError:
        t = e.token
        if t is None:
            line, col, length = 1, 1, 1
        elif t.expansion is not None:  # at the macro call it came out of
            x = t.expansion
            line, col = x.line, x.col
            length = x.end_col - x.col + 1 if x.end_line == x.line else 1
        else:
            line, col = t.line, t.col
            length = t.end_col - t.col + 1 if t.end_line == t.line else 1
        return DiffcError(format_diagnostic(SourceLocation(filename, line, col), e.message, e.code,
                                            self.sources.get(filename), max(1, length)))


def _is_directive(toks: list[PPToken]) -> bool:
    first = next((t for t in toks if t.kind != "comment"), None)
    return first is not None and first.kind == "punct" and first.text == "#"


def _file_key(path: str) -> str:
    return os.path.realpath(path) if os.path.isfile(path) else path


def _render(toks: list[PPToken], first_line: str) -> tuple[str, list[Piece]]:
    """One output line for a logical line's tokens after expansion, and its pieces. Copied
    tokens keep the white space between them where the source had them side by side, so the
    columns before the first expansion are the source's."""
    out = first_line[: len(first_line) - len(first_line.lstrip(" \t"))]
    pieces: list[Piece] = []
    prev: PPToken | None = None
    for t in toks:
        if prev is None:
            sep = ""
        elif t.expansion is None and prev.expansion is None and prev.end_line == t.line and t.col > prev.end_col:
            sep = " " * (t.col - prev.end_col - 1)  # tabs become spaces: columns count characters
        else:
            sep = " "
        if t.expansion is None:
            at = Piece(len(out) + len(sep), t.line, t.col, True)
            last = pieces[-1] if pieces else None
            if not (last and last.copied and last.line == at.line and last.col - last.out_col == at.col - at.out_col):
                pieces.append(at)  # (a token right after a copied one keeps its column offset)
        elif prev is None or prev.expansion != t.expansion:
            x = t.expansion
            pieces.append(Piece(len(out) + len(sep), x.line, x.col, False, x.end_line, x.end_col))
        out += sep + t.text
        prev = t
    return out, pieces
