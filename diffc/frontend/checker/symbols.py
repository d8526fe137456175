"""What the checker knows of a program's functions and variables, shared by the checker, the
call checks and the lowering: a function's parameters and attributes (FuncInfo, PInfo), a
variable (Local), the signature of its derivatives, and the located error every check raises.
Kept apart from checker.py so that the modules the checker uses need not import it."""

from __future__ import annotations

from dataclasses import dataclass, field

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, FrontendError

SWIZZLE = {"x": 0, "y": 1, "z": 2, "w": 3, "r": 0, "g": 1, "b": 2, "a": 3}
DIFF_ATTRS = {"Differentiable", "BackwardDifferentiable", "ForwardDifferentiable"}


@dataclass
class PInfo:
    name: str
    ty: T.Type
    direction: str  # in, out, inout
    no_diff: bool = False
    semantic: str | None = None  # `: SV_DispatchThreadID`
    default: A.Expr | None = None  # the value a call that omits this argument passes


@dataclass
class FuncInfo:
    name: str
    params: list[PInfo]
    ret: T.Type
    ret_no_diff: bool = False
    decl: A.Func | None = None
    attrs: dict[str, A.Attr] = field(default_factory=dict)
    fwd_custom: str | None = None
    bwd_custom: str | None = None
    bwd_of: str | None = None  # this function is the custom backward derivative of bwd_of
    fwd_of: str | None = None
    locals: list = field(default_factory=list)
    owner: T.Struct | None = None  # the struct of a method (its first parameter is `this` unless static)
    is_static: bool = False

    substitute: str | None = None  # [PrimalSubstitute]: what derivative code calls instead of this function

    @property
    def differentiable(self) -> bool:
        return bool(DIFF_ATTRS & set(self.attrs)) or bool(self.fwd_custom or self.bwd_custom or self.substitute) or self.zero_derivative

    @property
    def zero_derivative(self) -> bool:
        """`[TreatAsDifferentiable]`: differentiable, with derivative zero (its inputs are detached)."""
        return "TreatAsDifferentiable" in self.attrs

    @property
    def body_differentiated(self) -> bool:
        """Whether derivatives are generated from the body (not only given as custom ones)."""
        return bool(DIFF_ATTRS & set(self.attrs))

    @property
    def backward(self) -> bool:
        """Whether reverse mode differentiates the body: not when a custom backward derivative
        replaces it (the body then only runs as primal code, whose loops need no bound)."""
        return bool({"Differentiable", "BackwardDifferentiable"} & set(self.attrs)) and not self.bwd_custom


@dataclass
class Local:
    name: str
    ty: T.Type
    mutable: bool
    is_global: bool = False
    value: A.Expr | None = None  # a `static const` with its value: lowered where it is used
    shared: bool = False  # a `groupshared` global: a place in work-group memory (frontend/features/groupshared.py)


def err(code: str, msg: str, node: A.Node | tuple[int, int]):
    span = node if isinstance(node, tuple) else node.span
    return FrontendError(code, msg, span[0], span[1])


def ptr_param(p: PInfo) -> bool:
    """A parameter whose derivative goes through memory: an IDifferentiablePtrType, not no_diff."""
    return T.is_ptr_differentiable(p.ty) and not p.no_diff


def derivative_signature(f: FuncInfo, modes: tuple[str, ...]) -> tuple[list[PInfo], T.Type]:
    """Parameters and result of fwd_diff/bwd_diff applied (innermost first) to f."""
    params, ret, ret_nd = list(f.params), f.ret, f.ret_no_diff
    for mode in modes:
        new: list[PInfo] = []
        diff_ret = T.is_differentiable(ret) and not ret_nd
        for p in params:
            if ptr_param(p):  # both modes: the pointer pair, read and written through
                new.append(PInfo(p.name, T.PtrPair(p.ty), "in", True))
                continue
            d = T.is_differentiable(p.ty) and not p.no_diff
            if mode == "fwd":
                new.append(PInfo(p.name, T.Pair(p.ty) if d else p.ty, p.direction, p.no_diff, default=p.default))
            elif not d:
                if p.direction != "out":
                    new.append(PInfo(p.name, p.ty, "in", True, default=p.default))
            elif p.direction == "out":
                new.append(PInfo(p.name, T.differential(p.ty), "in"))
            else:
                new.append(PInfo(p.name, T.Pair(p.ty), "inout", default=p.default))
        if mode == "fwd":
            ret = T.Pair(ret) if diff_ret else ret
        else:
            if diff_ret:
                new.append(PInfo("dOut", T.differential(ret), "in"))
            ret, ret_nd = T.VOID, False
        params = new
    return params, ret


def count_args(e: A.Call, what: str, want: int | tuple[int, int]) -> None:
    lo, hi = (want, want) if isinstance(want, int) else want
    if not lo <= len(e.args) <= hi:
        exp = str(lo) if lo == hi else f"{lo} or {hi}"
        raise err(ARG_COUNT, f"{what} expects {exp} argument{'s' if hi != 1 else ''}, got {len(e.args)}", e)


def as_this_member(e: A.Name) -> A.Member:
    """A bare field name inside a method: `this.name`."""
    return A.Member(A.Name("this", span=e.span), e.id, e.span, False, span=e.span)
