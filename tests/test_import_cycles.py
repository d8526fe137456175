"""No import circles among diffc's modules, and no upward import of a pass.

Every import is an edge: at the top, inside a function, or under `if TYPE_CHECKING:` (an
annotation-only import still says that one module knows the other). A package `import a.b.c`
depends on `a.b.c`, not on the packages above it. Passes share their helpers through
diffc/kernel_support/, which imports no pass; the differentiation core and the backend import
no pass either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# import name -> folder (pyproject.toml's package-dir)
PACKAGES = {"diffc": "diffc", "diffc.dialects": "dialects", "diffc.passes": "passes", "diffc.tools": "tools"}


def modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in PACKAGES.items():
        for f in (ROOT / folder).rglob("*.py"):
            parts = [p for p in f.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            out[".".join([pkg, *parts])] = f
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names]
            out.update(s for s in subs if s in known)
            if any(s not in known for s in subs):
                out.add(base)
    return {m for m in out if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def described(circles: list[set[str]]) -> str:
    return "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in circles)


def test_no_import_circles():
    circles = cycles(import_graph())
    assert not circles, described(circles)


def test_no_upward_import_of_a_pass():
    """The differentiation core, the backend and the passes' shared helpers import no pass; a
    pass imports no other pass (what two passes share lives in diffc/kernel_support/)."""
    graph = import_graph()
    wrong = []
    for m, deps in graph.items():
        below = m.startswith(("diffc.ad.", "diffc.backend.", "diffc.kernel_support.")) or m in (
            "diffc.ad", "diffc.backend", "diffc.kernel_support")
        passes = sorted(d for d in deps if d.startswith("diffc.passes.") or d == "diffc.passes")
        if passes and (below or m.startswith("diffc.passes.")):
            wrong.append(f"{m} -> {', '.join(passes)}")
    assert not wrong, "imports of pass modules: " + "; ".join(wrong)


def test_annotation_only_imports_count(tmp_path):
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (tmp_path / "b.py").write_text("def f():\n    from . import a\n")
    known = {"p.a": tmp_path / "a.py", "p.b": tmp_path / "b.py"}
    graph = {m: imports(m, path, known) for m, path in known.items()}
    assert graph == {"p.a": {"p.b"}, "p.b": {"p.a"}}
    assert cycles(graph) == [{"p.a", "p.b"}]


def test_the_checker_sees_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_the_runtime_imports_no_pass():
    """Kernels are the compiler's business (diffc.compiler.lower_kernels): no module of the
    runtime imports a pass, not even for type checking."""
    known = modules()
    found = []
    for name, path in known.items():
        if not name.startswith("diffc.runtime"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{name} imports {n}" for n in names if n == "diffc.passes" or n.startswith("diffc.passes.")]
    assert not found, "; ".join(found)


def test_the_runtime_has_no_import_circle_even_for_type_checking():
    known = {m: p for m, p in modules().items() if m.startswith("diffc.runtime")}
    graph = {}
    for m, p in known.items():
        deps = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                deps.update({node.module, *(f"{node.module}.{a.name}" for a in node.names)})
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[m] = {d for d in deps if d in known and d != m}
    circles = cycles(graph)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in circles)
