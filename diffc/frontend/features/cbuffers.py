"""`cbuffer Name { T a; Texture2D t; ... }`: a block of the program's uniform globals, as HLSL and
Slang declare them. Its members are globals of their own names (what a global of each type is:
a texture or buffer is bound by name; a uniform value, `uint width;`, is the located E0008 that
every global uniform value is)."""

from __future__ import annotations

from diffc.frontend import ast as A
from diffc.frontend.feature import Feature


def _parse_cbuffer(p, attrs, start: int) -> A.Program:
    p.expect("cbuffer")
    p.ident("a cbuffer name")
    if p.accept(":"):  # `: register(b0)`
        p.ident("a register")
        if p.accept("("):
            while not p.accept(")"):
                p.i += 1
    p.expect("{")
    decls: list[A.Node] = []
    while not p.accept("}"):
        if p.tok.kind == "eof":
            p.error("expected '}' closing the cbuffer")
        d = p.top_decl()
        for x in d.decls if isinstance(d, A.Program) else [d]:
            if isinstance(x, A.Global):
                x.mods = set(x.mods) | {"uniform"}
            decls.append(x)
    p.accept(";")
    return A.Program(decls, span=p.span_from(start))


FEATURE = Feature("cbuffers", declarations={"cbuffer": _parse_cbuffer})
