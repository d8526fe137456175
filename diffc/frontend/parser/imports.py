"""Programs of several files: `import foo;`, `__exported import foo;`, `import "foo-bar";`,
`__include foo;`, `implementing foo;` and `module foo;`.

The parser hands each import-like declaration to a `Loader`, which finds the sibling file,
parses it (its imports first, recursively) and gives back its declarations, spliced in where
the import stands; each file is read once, so a second import, or a cycle, adds nothing. Every
file parses with one shared set of type names (a type an earlier file declares is a type in the
later ones). `module foo;` only names the module; `implementing foo;` loads foo like an import
(nothing, when foo is the file being compiled or is already loaded). Visibility is not enforced:
all files share one global scope, as if every import were `__exported`.

Where the file is: relative to the importing file's folder, then to the main file's; `a.b` is
`a/b`; a name that is not found as written is also tried with `_` as `-` (Slang's rule, so
`import test_intrinsics;` reads `test-intrinsics.slang`); `.slang` is added unless given.

Each file is preprocessed on its own (its macros do not reach the files it imports). Spans stay
plain character offsets: each file's offsets start where the previous file's end
(`ProgramSources`), so a diagnostic or an op location names the file it is in, with that file's
line and column."""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from collections.abc import Iterable

from diffc.diagnostics import SourceLocation
from diffc.frontend import ast as A
from diffc.frontend.errors import UNDEFINED, FrontendError
from diffc.frontend.feature import Prelude
from diffc.frontend.parser.library import LIBRARY_DIRS
from diffc.frontend.parser.namespaces import clashes, declared_types_by_scope, namespace_names
from diffc.frontend.parser.parser import Parser, declared_type_names, imported_names
from diffc.frontend.source import files_read
from diffc.frontend.source.lexer import Token, tokenize
from diffc.frontend.source.preprocess import Preprocessed, preprocess
from diffc.frontend.source.source_map import SourceMap


@dataclass
class ProgramSources:
    """Every file of a program, preprocessed, with the offset its text starts at in the one
    offset space the parser's spans use; `location` and `source` answer as a preprocessor
    `SourceMap` does, for the whole program."""

    bases: list[int] = field(default_factory=list)
    maps: list[SourceMap] = field(default_factory=list)

    def add(self, pre: Preprocessed) -> int:
        base = self.bases[-1] + len(self.maps[-1].text) + 1 if self.bases else 0
        self.bases.append(base)
        self.maps.append(pre.source_map)
        return base

    def _file(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self.bases, offset) - 1)

    def location(self, offset: int, end: bool = False) -> SourceLocation:
        k = self._file(offset)
        return self.maps[k].location(offset - self.bases[k], end)

    def source(self, file: str) -> str | None:
        return next((t for m in self.maps if (t := m.source(file)) is not None), None)

    def file_at(self, offset: int) -> str:
        """The file a span starting at `offset` is in (where its imports are looked for)."""
        return self.location(offset).file


class Loader:
    def __init__(self, main_file: str, defines: dict[str, str] | None = None, include_dirs: Iterable[str] = ()):
        self.sources = ProgramSources()
        self.defines, self.include_dirs = defines, tuple(include_dirs)
        self.main_dir = os.path.dirname(os.path.abspath(main_file)) if not main_file.startswith("<") else os.getcwd()
        self.loaded: set[str] = set()  # real paths of files read (or being read)
        self.program_files: set[str] = set()  # those and the `#pragma once` files included (preprocess)
        self.type_names: set[str] = set()
        self.generic_structs: set[str] = set()
        self.interfaces: set[str] = set()
        self.namespaces: set[str] = set()
        self.interface_aliases: dict[str, str] = {}
        self.namespace_clashes: dict[str, set[str]] = {}  # namespace -> its types another scope declares too
        self.module_dirs: list[str] = []  # folders of the modules that `implementing` names
        # (file, preprocessed text) -> prescan's tokens of it, which its parse takes instead of lexing again
        self.lexed: dict[tuple[str, str], list[Token]] = {}

    def prescan(self, text: str, filename: str) -> None:
        """Slang's declarations are order-free across the files of a program (a module's file may
        name a struct of a file included after it): before the main file is parsed, the type names
        of every file it reaches through imports are known. A file that does not read, lex or
        preprocess is skipped here; parsing reports it where it is imported."""
        todo, seen = [(text, filename)], set()
        scopes: dict[str | None, set[str]] = {}
        while todo:
            text, filename = todo.pop()
            key = filename if filename.startswith("<") else os.path.realpath(filename)
            if key in seen:
                continue
            seen.add(key)
            try:
                pre_text = preprocess(text, filename, self.defines, self.include_dirs).text
                toks = self.lexed[(filename, pre_text)] = tokenize(pre_text, filename)
            except FrontendError:
                continue
            declared_type_names(toks, self.type_names, self.interfaces, self.generic_structs, set())
            declared_types_by_scope(toks, scopes)
            self.namespaces |= namespace_names(toks)  # (a file may qualify a name by a later file's namespace)
            for kind, name, quoted in imported_names(toks):
                path = self._find(name, quoted, filename, parents=kind == "implementing")
                if path is None:
                    continue
                try:
                    with open(path, encoding="utf-8") as fh:
                        todo.append((fh.read(), path))
                except (OSError, UnicodeDecodeError):
                    continue
                files_read.read(path, todo[-1][0])
        self.namespace_clashes = clashes(scopes)
        for ns, names in self.namespace_clashes.items():  # (namespaces.py: `ns_Name`)
            self.type_names |= {f"{ns}_{n}" for n in names}
            self.generic_structs |= {f"{ns}_{n}" for n in names & self.generic_structs}

    def parse(self, text: str, filename: str) -> A.Program:
        """The program of `filename`, its imports spliced in."""
        if not self.loaded:
            self.prescan(text, filename)
        if not filename.startswith("<"):
            self.loaded.add(os.path.realpath(filename))
        # each file on its own; a file the program holds already is included for its macros only
        self.program_files |= self.loaded
        pre = preprocess(text, filename, self.defines, self.include_dirs, self.program_files)
        base = self.sources.add(pre)
        p = Parser(pre.text, filename, base=base, toks=self.lexed.pop((filename, pre.text), None))
        # names every file shares: types, generic structs, interfaces (a later file sees an earlier one's)
        self.type_names |= p.type_names
        self.interfaces |= p.interfaces
        p.type_names, p.generic_structs, p.interfaces = self.type_names, self.generic_structs, self.interfaces
        self.namespaces |= p.namespaces
        p.namespaces, p.interface_aliases = self.namespaces, self.interface_aliases
        p.namespace_clashes = self.namespace_clashes
        p.loader = self
        return p.parse_program()

    def type_ref(self, text: str) -> A.TypeRef:
        """A type written after the program was parsed (`ns::S<float, 2>[3]`), read with the
        program's type names, namespaces and generic structs (reflection: diffc/slangpy)."""
        from diffc.frontend.errors import SYNTAX
        from diffc.frontend.parser.namespaces import qualify

        p = Parser(text, "<type>")
        p.type_names, p.generic_structs, p.interfaces = self.type_names, self.generic_structs, self.interfaces
        p.namespaces, p.interface_aliases = self.namespaces, self.interface_aliases
        p.namespace_clashes = self.namespace_clashes
        p.toks = qualify(p.toks, self.namespace_clashes, self.namespaces)
        p.strip_qualifiers()
        t = p.array_dims(p.type_ref(), type_position=True)
        if p.tok.kind != "eof":
            raise FrontendError(SYNTAX, f"unexpected '{p.tok.text}' after the type", p.tok.start, p.tok.end)
        return t

    def prelude(self, part: Prelude) -> list[A.Node]:
        """A feature's prelude's declarations, once per program."""
        if part.file in self.loaded:
            return []
        self.loaded.add(part.file)
        return self.parse(part.text, part.file).decls

    def load(self, kind: str, name: str, quoted: bool, where: tuple[int, int]) -> list[A.Node]:
        """The declarations an `import`/`__include`/`implementing` of `name` adds (none when the
        file is already loaded); `module` adds nothing."""
        if kind == "module":
            return []
        importer = self.sources.file_at(where[0])
        path = self._find(name, quoted, importer, parents=kind == "implementing")
        if path is None:
            tried = ", ".join(self._candidates(name, quoted))
            raise FrontendError(UNDEFINED, f"cannot find the file of {kind} '{name}' (looked for {tried})", *where)
        if kind == "implementing" and os.path.dirname(path) not in self.module_dirs:
            self.module_dirs.append(os.path.dirname(path))  # the module's other files name paths from there
        if os.path.realpath(path) in self.loaded:
            return []
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as err:
            raise FrontendError(UNDEFINED, f"cannot read '{path}' for {kind} '{name}': {err}", *where) from None
        files_read.read(path, text)
        return self.parse(text, path).decls

    def _candidates(self, name: str, quoted: bool) -> list[str]:
        stem = name if quoted else name.replace(".", "/")
        stems = [stem] if "_" not in stem or quoted else [stem, stem.replace("_", "-")]
        return [s if s.endswith(".slang") else s + ".slang" for s in stems]

    def _find(self, name: str, quoted: bool, importer: str, parents: bool = False) -> str | None:
        """The file: beside the importer, beside the main file, beside the file of a module that
        an `implementing` named, in the include directories; for `implementing` (a file of a
        module whose own file is often a folder up) also in the importer's parent folders; last,
        diffc's own library (`import slangpy;`), so a program's own file of that name wins."""
        here = os.getcwd() if importer.startswith("<") else os.path.dirname(os.path.abspath(importer))
        dirs = [here, self.main_dir, *self.module_dirs, *self.include_dirs]
        d = here
        while parents and os.path.dirname(d) != d and len(dirs) < 16:
            d = os.path.dirname(d)
            dirs.append(d)
        dirs += LIBRARY_DIRS
        for d in dirs:
            for cand in self._candidates(name, quoted):
                path = os.path.join(d, cand)
                if os.path.isfile(path):
                    return path
                files_read.missing(path)  # (a file made here later would be found instead)
        return None
