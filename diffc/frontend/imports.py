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

Spans stay plain character offsets: each file's offsets start where the previous file's end
(`SourceMap`), so a diagnostic or an op location names the file it is in, with that file's
line and column."""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field

from diffc.diagnostics import DiffcError
from diffc.frontend import ast as A
from diffc.frontend.errors import UNDEFINED, FrontendError
from diffc.frontend.parser import Parser


@dataclass
class SourceMap:
    """Every file of a program with the offset its characters start at."""

    bases: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def add(self, filename: str, text: str) -> int:
        base = self.bases[-1] + len(self.texts[-1]) + 1 if self.bases else 0
        self.bases.append(base)
        self.names.append(filename)
        self.texts.append(text)
        return base

    def file_of(self, offset: int) -> int:
        return max(0, bisect.bisect_right(self.bases, offset) - 1)

    def locate(self, offset: int) -> tuple[str, str, int]:
        """(file name, its text, the offset within it)."""
        k = self.file_of(offset)
        return self.names[k], self.texts[k], offset - self.bases[k]

    def line_col(self, offset: int) -> tuple[str, int, int]:
        name, text, local = self.locate(offset)
        line = text.count("\n", 0, local) + 1
        return name, line, local - (text.rfind("\n", 0, local) + 1) + 1

    def error(self, e: FrontendError) -> DiffcError:
        k = self.file_of(e.start)
        base = self.bases[k]
        local = FrontendError(e.code, e.message, e.start - base, max(e.start, e.end) - base)
        return local.to_diffc_error(self.texts[k], self.names[k])


class Loader:
    def __init__(self, main_file: str):
        self.sources = SourceMap()
        self.main_dir = os.path.dirname(os.path.abspath(main_file)) if not main_file.startswith("<") else os.getcwd()
        self.loaded: set[str] = set()  # real paths of files read (or being read)
        self.type_names: set[str] = set()
        self.generic_structs: set[str] = set()

    def parse(self, text: str, filename: str) -> A.Program:
        """The program of `filename`, its imports spliced in."""
        if not filename.startswith("<"):
            self.loaded.add(os.path.realpath(filename))
        base = self.sources.add(filename, text)
        p = Parser(text, filename, base=base)
        p.type_names, p.generic_structs = self.type_names, self.generic_structs
        p.loader = self
        return p.parse_program()

    def load(self, kind: str, name: str, quoted: bool, where: tuple[int, int]) -> list[A.Node]:
        """The declarations an `import`/`__include`/`implementing` of `name` adds (none when the
        file is already loaded); `module` adds nothing."""
        if kind == "module":
            return []
        importer, _, _ = self.sources.locate(where[0])
        path = self._find(name, quoted, importer)
        if path is None:
            tried = ", ".join(self._candidates(name, quoted))
            raise FrontendError(UNDEFINED, f"cannot find the file of {kind} '{name}' (looked for {tried})", *where)
        if os.path.realpath(path) in self.loaded:
            return []
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as err:
            raise FrontendError(UNDEFINED, f"cannot read '{path}' for {kind} '{name}': {err}", *where) from None
        return self.parse(text, path).decls

    def _candidates(self, name: str, quoted: bool) -> list[str]:
        stem = name if quoted else name.replace(".", "/")
        stems = [stem] if "_" not in stem or quoted else [stem, stem.replace("_", "-")]
        return [s if s.endswith(".slang") else s + ".slang" for s in stems]

    def _find(self, name: str, quoted: bool, importer: str) -> str | None:
        dirs = [os.getcwd() if importer.startswith("<") else os.path.dirname(os.path.abspath(importer)), self.main_dir]
        for d in dirs:
            for cand in self._candidates(name, quoted):
                path = os.path.join(d, cand)
                if os.path.isfile(path):
                    return path
        return None
