"""The front end's structure (docs/architecture.md, "The front end"): no import circle inside
diffc/frontend even counting imports made only for type checking, the parser and the checker
import no language feature (they call the features' hooks), and every feature module is
registered once."""

from __future__ import annotations

import ast
from pathlib import Path

from diffc.frontend import feature
from diffc.frontend.features import FEATURES

FRONTEND = Path(__file__).resolve().parent.parent / "diffc" / "frontend"


def _modules() -> dict[str, Path]:
    out = {}
    for f in FRONTEND.rglob("*.py"):
        parts = [p for p in f.relative_to(FRONTEND).with_suffix("").parts if p != "__init__"]
        out[".".join(["diffc.frontend", *parts])] = f
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every front-end module `name` imports, anywhere in it (under `if TYPE_CHECKING:` too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[: len(package) - (node.level - 1)] + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names]
            out.update(s for s in subs if s in known)
            if any(s not in known for s in subs):
                out.add(base)
    return {m for m in out if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: _imports(m, p, known) for m, p in known.items()}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules in order), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)) is not None:
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


def test_no_import_circle_in_the_front_end_type_checking_imports_included():
    found = _circle(_graph())
    assert found is None, "import circle: " + " -> ".join(found)


def test_the_circle_finder_finds_one():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) is None


def test_the_parser_and_the_checker_import_no_feature():
    graph = _graph()
    for m, deps in graph.items():
        if m.startswith(("diffc.frontend.parser", "diffc.frontend.checker", "diffc.frontend.source")):
            named = sorted(d for d in deps if d.startswith("diffc.frontend.features"))
            assert not named, f"{m} imports {named}: call the features through diffc/frontend/feature.py"


def test_every_feature_module_is_registered_once():
    names = [f.name for f in FEATURES]
    assert len(names) == len(set(names))
    assert feature.installed() == tuple(FEATURES)
    import importlib

    for path in sorted((FRONTEND / "features").glob("*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"diffc.frontend.features.{path.stem}")
        if hasattr(module, "FEATURE"):
            assert isinstance(module.FEATURE, feature.Feature)
            assert sum(f is module.FEATURE for f in FEATURES) == 1, f"{path.stem}.FEATURE is not in FEATURES"
