"""`__target_switch { case cuda: ... default: ... }`: code chosen by the compilation target.

diffc's target is OpenCL C, which is none of Slang's named targets (cuda, cpp, hlsl, glsl, spirv,
metal, ...), so the branch taken is the one Slang takes for a target no case names: `default`.
Only that branch is parsed; the others (CUDA's `__intrinsic_asm`, a prelude) are skipped
unread. A switch without `default` has no code for this target: a located E0008 at
`__target_switch` that names the targets it has.

`__intrinsic_asm` and `__requirePrelude` (target code written inline) are E0008 wherever they are
parsed."""

from __future__ import annotations

from diffc.frontend import ast as A
from diffc.frontend.errors import UNSUPPORTED, FrontendError
from diffc.frontend.feature import Feature


def _branch_end(p, i: int) -> int:
    """The index of the token after a branch's statements: the next `case` / `default` of this
    switch, or its closing brace."""
    depth = 0
    while True:
        t = p.toks[i]
        if t.kind == "eof":
            return i
        if t.kind == "punct" and t.text in ("{", "(", "["):
            depth += 1
        elif t.kind == "punct" and t.text in ("}", ")", "]"):
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and t.kind == "ident" and (t.text == "default" and p.toks[i + 1].text == ":" or
                                                   t.text == "case" and p.toks[i + 2].text == ":"):
            return i
        i += 1


def _parse_target_switch(p, start: int) -> A.Stmt:
    kw = p.tok
    p.i += 1
    p.expect("{")
    targets: list[str] = []
    chosen: tuple[int, int] | None = None
    while not p.at("}"):
        labels = []
        while p.at("case") or p.at("default"):
            if p.accept("default"):
                labels.append("default")
            else:
                p.i += 1
                labels.append(p.ident("a target name").text)
            p.expect(":")
        if not labels:
            p.error("expected 'case' or 'default' in __target_switch")
        end = _branch_end(p, p.i)
        targets += labels
        if "default" in labels:
            chosen = (p.i, end)
        p.i = end
    close = p.i
    if chosen is None:
        raise FrontendError(UNSUPPORTED, "__target_switch without a 'default:' branch has no code for diffc's "
                            f"target (OpenCL C; it has {', '.join(targets) or 'no cases'}): such a switch is not "
                            "supported", kw.start, kw.end)
    p.i = chosen[0]
    stmts = []
    while p.i < chosen[1]:
        stmts.append(p.stmt())
    p.i = close
    p.expect("}")
    return A.Block(stmts, span=p.span_from(start))


def _refuse_inline_target_code(p, start: int) -> A.Stmt:
    t = p.tok
    raise FrontendError(UNSUPPORTED, f"{t.text} (target code written inline) is not supported", t.start, t.end)


FEATURE = Feature(
    "target_switch",
    statements={"__target_switch": _parse_target_switch, "__intrinsic_asm": _refuse_inline_target_code,
                "__requirePrelude": _refuse_inline_target_code},
)
