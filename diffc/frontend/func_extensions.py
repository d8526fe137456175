"""`__func_extension fwd_diff(f)(params) -> R { body }` and `__func_extension bwd_diff(f)(...)`:
a custom derivative given after (and apart from) the function it belongs to, also for a method
(`fwd_diff(S::m)`, whose `this` is the derivative's first parameter). It is parsed into an
ordinary function carrying `[ForwardDerivativeOf(f)]` / `[BackwardDerivativeOf(f)]`, so an
overloaded f is told apart by the derivative's signature (overloads.py). The generic form
(`__func_extension<T>`) and `__apply` are located E0008."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.errors import SYNTAX, UNSUPPORTED, FrontendError

if TYPE_CHECKING:
    from diffc.frontend.parser import Parser

KEYWORD = "__func_extension"
_MODES = {"fwd_diff": "ForwardDerivativeOf", "__fwd_diff": "ForwardDerivativeOf",
          "bwd_diff": "BackwardDerivativeOf", "__bwd_diff": "BackwardDerivativeOf"}


def parse_func_extension(p: Parser, attrs: list[A.Attr], start: int) -> A.Func:
    kw = p.expect(KEYWORD)
    if p.at("<"):
        raise FrontendError(UNSUPPORTED, "a generic __func_extension is not supported", kw.start, p.tok.end)
    mode = p.ident("fwd_diff or bwd_diff")
    if mode.text not in _MODES:
        what = "__func_extension __apply" if mode.text == "__apply" else f"__func_extension {mode.text}"
        raise FrontendError(UNSUPPORTED, f"{what} is not supported (only fwd_diff and bwd_diff)",
                            mode.start, mode.end)
    p.expect("(")
    target = p.postfix()  # `f`, `S::m` or `S.m`
    p.expect(")")
    if not (isinstance(target, A.Name) or isinstance(target, A.Member) and isinstance(target.base, A.TypeExpr)):
        raise FrontendError(SYNTAX, "expected a function or a method name, as in fwd_diff(f) or fwd_diff(S::m)",
                            *target.span)
    name = target.id if isinstance(target, A.Name) else f"{target.base.type.name}_{target.name}"
    # the function reads like `R name(params) { body }` once the target is known
    ret_start = p.tok.start
    func = p.function(attrs + [A.Attr(_MODES[mode.text], [target], span=target.span)], set(),
                      A.TypeRef("void", span=(ret_start, ret_start)), _name_token(p, name, mode), start,
                      arrow_result=True)
    return func


def _name_token(p: Parser, name: str, mode):
    from diffc.frontend.lexer import Token

    return Token("ident", f"{name}__{mode.text.strip('_')}_ext{mode.start}", mode.start, mode.end)
