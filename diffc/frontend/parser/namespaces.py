"""Namespaces whose declarations share a name with another scope's (`namespace Activation {
struct Identity ... }` beside a global `struct Identity`).

The parser joins every namespace's declarations into the program's one scope and drops `ns::`
qualifiers (parser.strip_qualifiers). A type that a namespace declares and another scope (the
global one, or another namespace) declares too would then be declared twice; such a type gets
the qualified name `ns_Name` instead, in its declaration, in its namespace's body (where the bare
name means it) and wherever `ns::Name` or `ns.Name` names it. Elsewhere the bare name is the other
scope's. The program's files are scanned before any is parsed (imports.Loader.prescan), so a
namespace in one file sees the clash with a type in another."""

from __future__ import annotations

from diffc.frontend.source.lexer import Token

TYPE_KEYWORDS = ("struct", "interface", "enum")


def namespace_paths(toks: list[Token]) -> list[str | None]:
    """For each token, the namespace whose body it is in (`a_b` for `namespace a::b` or `a { b`),
    None at the top level."""
    out: list[str | None] = []
    stack: list[tuple[str, int]] = []  # (path, brace depth at its `{`)
    depth, pending = 0, None
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "ident" and t.text == "namespace" and i + 1 < len(toks) and toks[i + 1].kind == "ident":
            parts, k = [toks[i + 1].text], i + 2
            while k + 1 < len(toks) and toks[k].text in (".", "::") and toks[k + 1].kind == "ident":
                parts.append(toks[k + 1].text)
                k += 2
            outer = stack[-1][0] + "_" if stack else ""
            pending = outer + "_".join(parts)
            out.extend([stack[-1][0] if stack else None] * (k - i))
            i = k
            continue
        if t.text == "{":
            depth += 1
            if pending is not None:
                stack.append((pending, depth))
                pending = None
        out.append(stack[-1][0] if stack else None)
        if t.text == "}":
            if stack and stack[-1][1] == depth:
                stack.pop()
            depth -= 1
        i += 1
    return out


def namespace_names(toks: list[Token]) -> set[str]:
    """Every name a `namespace a.b {` / `namespace a::b {` in `toks` declares (a, b)."""
    out: set[str] = set()
    for i, t in enumerate(toks[:-1]):
        if t.kind == "ident" and t.text == "namespace" and toks[i + 1].kind == "ident":
            k = i + 1
            while k < len(toks) and toks[k].kind == "ident":
                out.add(toks[k].text)
                if k + 1 >= len(toks) or toks[k + 1].text not in (".", "::"):
                    break
                k += 2
    return out


def declared_types_by_scope(toks: list[Token], scopes: dict[str | None, set[str]]) -> None:
    """Adds the struct, interface and enum names `toks` declares to their scope's set."""
    paths = namespace_paths(toks)
    for i in range(len(toks) - 1):
        kw, name = toks[i], toks[i + 1]
        if kw.kind == "ident" and name.kind == "ident" and kw.text in TYPE_KEYWORDS:
            if name.text in ("class", "struct") and kw.text == "enum" and i + 2 < len(toks):
                name = toks[i + 2]
            scopes.setdefault(paths[i], set()).add(name.text)


def clashes(scopes: dict[str | None, set[str]]) -> dict[str, set[str]]:
    """namespace -> the types it declares that another scope declares too."""
    out: dict[str, set[str]] = {}
    for ns, names in scopes.items():
        if ns is None:
            continue
        others = set().union(*(n for s, n in scopes.items() if s != ns))
        if names & others:
            out[ns] = names & others
    return out


def qualify(toks: list[Token], clashing: dict[str, set[str]], namespaces: set[str]) -> list[Token]:
    """`toks` with each clashing name of a namespace renamed `ns_Name` where it means that one."""
    if not clashing:
        return toks
    paths = namespace_paths(toks)
    out: list[Token] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        prev = out[-1].text if out else ""
        if t.kind == "ident" and t.text in namespaces and prev not in (".", "::", "->", "namespace"):
            parts, k = [t.text], i + 1  # `a::b::Name`
            while k + 1 < len(toks) and toks[k].text in ("::", ".") and toks[k + 1].kind == "ident":
                parts.append(toks[k + 1].text)
                k += 2
            for n in range(len(parts) - 1, 0, -1):  # the longest namespace path that declares the name
                ns = "_".join(parts[:n])
                if parts[n] in clashing.get(ns, ()):
                    last = toks[i + 2 * n]
                    out.append(Token("ident", f"{ns}_{parts[n]}", t.start, last.end))
                    i += 2 * n + 1
                    break
            else:
                out.append(t)
                i += 1
            continue
        here = paths[i]
        if t.kind == "ident" and here is not None and prev not in (".", "::", "->"):
            scope = here
            while scope:  # the innermost enclosing namespace that declares the name
                if t.text in clashing.get(scope, ()):
                    t = Token("ident", f"{scope}_{t.text}", t.start, t.end)
                    break
                scope = scope.rpartition("_")[0]
        out.append(t)
        i += 1
    return out
