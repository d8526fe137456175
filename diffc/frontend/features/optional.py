"""`Optional<T>`, `none`, `nullptr`, and `x is S` / `x as S` on interface-typed values.

`Optional<T>` is a struct of two fields, `hasValue` (a bool, no derivative) and `value` (a T),
so calls, fields, parameters and derivatives need nothing new. An absent value holds zeros:
`none` is (false, zeros), and `.value` of it reads zeros (Slang leaves it undefined).

Derivatives: the value carries T's derivative; an absent value has none to carry. The
Differential (`Optional<T>.Differential`) holds only the value's derivative leaves, because
diff-fwd and diff-rev pair derivatives with the leaves that carry them (types.leaves), and a bool
carries none. Its presence is the primal's: `dp.d` of a `DifferentialPair<Optional<T>>` reads
as an `Optional<T.Differential>` whose hasValue is the primal's hasValue. So a derivative of an
absent value is absent (`dp.d == none`), and a `none` given as a derivative is a zero one.

`nullptr`: a pointer is a buffer and an offset (types.Pointer). The null pointer is the offset
-1, which no valid pointer has (offsets count elements from a buffer's start), so `p == nullptr`
compares the offset alone; its buffer is a poison memref marked `diffc.null`, which the OpenCL
backend prints as a null pointer. Reading through it reads index -1 of that: the bounds check
(passes/bounds_check.py) gives a null buffer length 0, so the read is a located E0011 runtime
error that reads nothing, where the pointer was made or passed to; see docs/frontend.md.

`x is S` / `x as S`: where x's type is known statically (a struct) the answer is a constant;
where it is a tagged union (dynamic.py), it is a test of the tag, and `as` gives the union's
field for S, which holds zeros unless the tag selects S.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, ub
from xdsl.dialects.builtin import IndexType, IntegerAttr, UnitAttr

from diffc.dialects.kernel import NULL_POINTER_ATTR
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.feature import Feature
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNSUPPORTED
from diffc.frontend.checker.symbols import err

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

NULL_OFFSET = -1


# ---- types -------------------------------------------------------------------------------

def optional_type(c: Checking, inner: T.Type, where: A.Node) -> T.Struct:
    """The struct of `Optional<inner>`, one per inner type in a program."""
    if isinstance(inner, T.Void | T.Null | T.Buffer | T.Pair | T.PtrPair) or (
            isinstance(inner, T.Struct) and inner.optional_diff_of is not None):
        raise err(UNSUPPORTED, f"Optional<{inner}> is not supported", where)
    cache: dict = c.__dict__.setdefault("optional_types", {})
    key = inner if not isinstance(inner, T.Struct) else id(inner)
    if key in cache:
        return cache[key]
    s = T.Struct(f"Optional<{inner}>", [("hasValue", T.BOOL, True), ("value", inner, False)],
                 differentiable=T.is_differentiable(inner), optional_of=inner,
                 template=("Optional", (inner,)))  # (so that `Optional<T>` infers T: generics.infer)
    if s.differentiable:
        if isinstance(inner, T.Struct) and inner.diff_struct is None and inner.ptr_differential is None:
            # named inside inner's own declaration (a typealias), before inner's Differential exists
            raise err(UNSUPPORTED, f"Optional<{inner}> inside the declaration of '{inner}' itself is not supported",
                      where)
        s.diff_struct = T.make_differential_struct(s)
        s.diff_struct.optional_diff_of = s
    cache[key] = s
    return s


def is_optional(t: T.Type) -> bool:
    return isinstance(t, T.Struct) and t.optional_of is not None


# ---- checking ----------------------------------------------------------------------------

def check_name(e: A.Name) -> T.Type | None:
    """`none` and `nullptr`, where no variable of that name is declared."""
    return {"none": T.NONE, "nullptr": T.NULLPTR}.get(e.id)


def check_ternary(e: A.Ternary, a: T.Type, b: T.Type) -> T.Type:
    """`c ? opt : none`, `c ? p : nullptr`: the other side's type."""
    null, other = (a, b) if isinstance(a, T.Null) else (b, a)
    if not T.convertible(null, other):
        raise err(TYPE_MISMATCH, f"the branches of '?:' have types {a} and {b}", e)
    return other


def check_constructor(c: Checking, e: A.Call, t: T.Struct) -> T.Type:
    """`Optional<T>(x)` (present) and `Optional<T>()` (none)."""
    if len(e.args) > 1:
        raise err(ARG_COUNT, f"{t} constructor takes a value or nothing, got {len(e.args)} arguments", e)
    for a in e.args:
        c.expect_type(a, t)
    return t


def check_init_list(e: A.InitList, t: T.Struct) -> None:
    if e.items:  # (its fields are not what a program writes: `{}` is none)
        raise err(UNSUPPORTED, f"an initializer list for {t} is not supported: write a value or none", e)


def pointers_compared(e: A.Binary, a: T.Type, b: T.Type) -> None:
    if e.op in ("==", "!=") and isinstance(a, T.Pointer) and isinstance(b, T.Pointer):
        raise err(UNSUPPORTED, f"comparing two pointers ({a} {e.op} {b}) is not supported; a pointer compares "
                  "with nullptr", e)


def check_null_compare(e: A.Binary, a: T.Type, b: T.Type) -> T.Type:
    """`opt == none`, `p != nullptr` (either side)."""
    null, other, at = (a, b, e.rhs) if isinstance(a, T.Null) else (b, a, e.lhs)
    if e.op not in ("==", "!="):
        raise err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {a} and {b}", e)
    fits = (is_optional(other) if null == T.NONE else isinstance(other, T.Pointer) and not other.by_value) \
        or other == null
    if not fits:
        want = "an Optional" if null == T.NONE else "a pointer"
        raise err(TYPE_MISMATCH, f"'{null}' is compared with {want}, got {other}", at)
    return T.BOOL


def pair_differential(c: Checking, t: T.Pair, where: A.Node) -> T.Type:
    """The type of `dp.d`: for an Optional, `Optional<T.Differential>` (presence: the primal's)."""
    d = T.differential(t.elem)
    if is_optional(t.elem):
        return optional_type(c, d.fields[0][1], where)  # type: ignore[union-attr]
    return d


def check_type_test(c: Checking, e: A.TypeTest) -> T.Type:
    """`x is S`: a bool; `x as S`: an Optional<S>. In a generic instance, `T is half` (a type
    parameter's type) and `x is float`, `x as To` on a value of a built-in type are known
    statically: a constant, an Optional that holds x exactly when its type is To."""
    if isinstance(e.operand, A.TypeExpr) and e.op == "is":
        same = c.resolve(e.operand.type) == c.resolve(e.type)
        return c.expr(c.replace(e, A.BoolLit(same, span=e.span)))
    src = c.expr(e.operand)
    dst = c.resolve(e.type)
    if not isinstance(src, T.Struct | T.Pointer | T.Null) and not isinstance(dst, T.Struct | T.Pointer):
        e.target_ty = dst  # type: ignore[attr-defined]
        return T.BOOL if e.op == "is" else optional_type(c, dst, e.type)
    if not isinstance(dst, T.Struct) or dst.dynamic_of is not None or dst.optional_of is not None:
        raise err(UNSUPPORTED, f"'{e.op}' with type {dst} is not supported (only a struct type)", e.type)
    if not isinstance(src, T.Struct) or src.optional_of is not None:
        raise err(UNSUPPORTED, f"'{e.op}' on a value of type {src} is not supported (only on an interface-typed "
                  "value)", e.operand)
    if src.dynamic_of is not None and T.union_slot(src, dst) is None:
        raise err(TYPE_MISMATCH, f"{dst} does not implement interface '{src.dynamic_of}'", e.type)
    e.target_ty = dst  # type: ignore[attr-defined]
    return T.BOOL if e.op == "is" else optional_type(c, dst, e.type)


def if_let(name: str, name_span: A.Span, init: A.Expr, then: A.Stmt, orelse: A.Stmt | None,
           span: A.Span) -> A.Stmt:
    """`if (let x = opt) A else B` is `{ let t = opt; if (t.hasValue) { let x = t.value; A } else B }`."""
    at = init.span
    tmp = f"__optional_{span[0]}"  # (a source offset: unique in the program)
    ref = lambda: A.Name(tmp, span=at)  # noqa: E731
    bind = A.VarDecl("let", None, name, A.Member(ref(), "value", at, span=at), span=name_span)
    test = A.If(A.Member(ref(), "hasValue", at, span=at), A.Block([bind, then], span=then.span), orelse, span=span)
    return A.Block([A.VarDecl("let", None, tmp, init, span=at), test], span=span)


# ---- lowering ----------------------------------------------------------------------------

def lower_convert(lw, vals: list, src: T.Type, dst: T.Struct) -> list:
    """A value of `src` as an Optional (or an Optional's Differential, which has no hasValue)."""
    if dst.optional_of is not None:
        inner, flagged = dst.optional_of, True
    else:
        inner, flagged = T.differential(dst.optional_diff_of.optional_of), False  # type: ignore[union-attr]
    if src == T.NONE:
        flag, value = lw.const(0, T.BOOL), lw.const(0, inner)
    elif is_optional(src):
        flag, value = vals[:1], lw.convert(vals[1:], src.optional_of, inner)  # type: ignore[union-attr]
    elif isinstance(src, T.Struct) and src.optional_diff_of is not None:
        flag, value = lw.const(1, T.BOOL), lw.convert(vals, src.fields[0][1], inner)
    else:
        flag, value = lw.const(1, T.BOOL), lw.convert(vals, src, inner)
    return (flag if flagged else []) + value


def null_pointer(lw, t: T.Pointer) -> list:
    (mem, _) = T.leaf_types(t)
    op = ub.PoisonOp(mem)
    op.attributes[NULL_POINTER_ATTR] = UnitAttr()
    return [lw.v(op), lw.v(arith.ConstantOp(IntegerAttr(NULL_OFFSET, IndexType())))]


def lower_null_compare(lw, e: A.Binary) -> list:
    a, b = e.lhs.ty, e.rhs.ty
    other, ty = (e.rhs, b) if isinstance(a, T.Null) else (e.lhs, a)
    if isinstance(ty, T.Null):  # `none == none`
        return lw.const(int(e.op == "=="), T.BOOL)
    vals = lw.expr(other)
    if isinstance(ty, T.Pointer):
        absent = lw.v(arith.CmpiOp(vals[1], lw.index_const(NULL_OFFSET), "eq"))
    else:
        absent = lw.v(arith.XOrIOp(vals[0], lw.const(1, T.BOOL)[0]))
    return [absent] if e.op == "==" else [lw.v(arith.XOrIOp(absent, lw.const(1, T.BOOL)[0]))]


def lower_type_test(lw, e: A.TypeTest) -> list:
    src, dst = e.operand.ty, e.target_ty  # type: ignore[attr-defined]
    vals = lw.expr(e.operand)
    if getattr(src, "dynamic_of", None) is None:  # statically known (also a number's): a constant
        same = src is dst or not isinstance(src, T.Struct) and src == dst
        hit = lw.const(int(same), T.BOOL)
        value = vals if same else lw.const(0, dst)
    else:
        slot = T.union_slot(src, dst)
        hit = [lw.v(arith.CmpiOp(vals[0], lw.const(T.union_tag(src, slot), T.INT)[0], "eq"))]
        start, n = T.field_offset(src, slot)
        value = vals[start : start + n]  # (zeros where the tag selects another implementation)
    return hit if e.op == "is" else hit + value


def _check_binary(c: Checking, e: A.Binary, a: T.Type, b: T.Type) -> T.Type | None:
    if isinstance(a, T.Null) or isinstance(b, T.Null):
        return check_null_compare(e, a, b)
    pointers_compared(e, a, b)
    return None


def _check_member(c: Checking, e: A.Member, t: T.Type) -> T.Type | None:
    if isinstance(t, T.Pair) and e.name in ("d", "differential", "getDifferential") and is_optional(t.elem):
        return pair_differential(c, t, e)
    return None


def _check_init_list(c: Checking, e: A.InitList, want: T.Type) -> None:
    if isinstance(want, T.Struct) and want.optional_of is not None:
        check_init_list(e, want)


FEATURE = Feature(
    "optional", if_let=if_let, check_name=lambda c, e: check_name(e),
    check_ternary=lambda c, e, a, b: check_ternary(e, a, b) if isinstance(a, T.Null) or isinstance(b, T.Null) else None,
    check_binary=_check_binary, check_member=_check_member, check_init_list=_check_init_list,
    check_expr={A.TypeTest: check_type_test},
    resolve_type=lambda c, name, t: optional_type(c, c._type_arg(t, t.args[0]), t)
    if name == "Optional" and len(t.args) == 1 else None,
    check_constructor=lambda c, e, t: check_constructor(c, e, t)
    if isinstance(t, T.Struct) and t.optional_of is not None else None,
)
