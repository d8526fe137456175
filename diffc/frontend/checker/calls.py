"""Type checking of calls: user functions, fwd_diff/bwd_diff, diffPair, detach, printf,
intrinsics, constructors and `T.dzero()` / `T.dadd(a, b)`. Sets `call.kind` and `call.target`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import feature
from diffc.frontend import types as T
from diffc.frontend.checker.builtins import ATOMIC_KINDS, BUILTINS, WAVE_IDENTITY, WAVE_CONSTANT, slang_differentiable
from diffc.frontend.checker.builtin_types import check_builtin, check_type_method, instantiate_builtin
from diffc.frontend.errors import ARG_COUNT, NOT_DIFFERENTIABLE, TYPE_MISMATCH, UNDEFINED, UNKNOWN_MEMBER, UNSUPPORTED, \
    FrontendError
from diffc.frontend.checker.generic_overloads import method_template
from diffc.frontend.checker.overloads import bound_this, mixes_static, static_call
from diffc.frontend.checker.symbols import count_args as _count
from diffc.frontend.checker.symbols import derivative_signature, err
from diffc.frontend.parser.parser import CALL_METHOD
from diffc.frontend.checker.defaults import fill_defaults, is_default_arg
from diffc.frontend.checker.inits import INIT

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

DERIV = {"fwd_diff": "fwd", "__fwd_diff": "fwd", "bwd_diff": "bwd", "__bwd_diff": "bwd"}


# HLSL's pixel-quad derivatives: known, refused by name (E0008), not unknown (E0002)
SCREEN_DERIVATIVES = {"ddx", "ddy", "ddx_coarse", "ddy_coarse", "ddx_fine", "ddy_fine", "fwidth"}

def check_call(c: Checking, e: A.Call) -> T.Type:
    _bound_method_derivative(c, e)
    callee = e.callee
    local = c.lookup(callee.id) if isinstance(callee, A.Name) else None
    if local is not None and (called := feature.first("check_local_call", c, e, local)) is not None:
        return called  # (a lambda's call: lambdas.py)
    if local is not None and isinstance(local.ty, T.Struct) and CALL_METHOD in local.ty.methods:
        # calling a value whose struct declares `operator()`
        callee = e.callee = A.Member(callee, CALL_METHOD, name_span=callee.span, span=callee.span)
    if isinstance(callee, A.Name) and c.lookup(callee.id) is None:
        owner = c.func.owner if c.func is not None else None
        sibling = method_template(c, owner, callee.id, e.args, callee) if owner is not None else None
        if owner is not None and _means_generic(c, sibling, owner.methods.get(callee.id),
                                                e.args, callee):  # a generic sibling method
            d = sibling
            fi = c.funcs[c.instantiate_func(callee.id, callee, e.args, d=d, owner=owner)]  # type: ignore[arg-type]
            _bind_method(e, fi, None if fi.is_static else A.Name("this", span=callee.span))
            callee = e.callee
        elif owner is not None and callee.id in owner.methods:  # a sibling method: `eval(x)` is `this.eval(x)`
            fi = c.funcs[owner.methods[callee.id]]
            this = None
            if not fi.is_static or mixes_static(c, fi.name) and not c.func.is_static:  # type: ignore[union-attr]
                this = bound_this(A.Name("this", span=callee.span))
            _bind_method(e, fi, this)
            callee = e.callee
        elif _means_generic(c, c.func_templates.get(callee.id), callee.id if callee.id in c.funcs else None,
                            e.args, callee) and not _builtin_instead(c, callee, e.args):
            callee.id = c.instantiate_func(callee.id, callee, e.args)
    _instantiate_differentiated(c, e)
    if isinstance(callee, A.Member):
        bound = _method_callee(c, e, callee)
        if bound is not None:
            return bound
        callee = e.callee
    if isinstance(callee, A.Name) and c.lookup(callee.id) is None and callee.id not in c.funcs:
        name = callee.id
        if name in DERIV:
            _count(e, name, 1)
            f = _builtin_ref(c, e.args[0])
            if isinstance(f, T.BuiltinRef):  # fwd_diff(sin): typed when called
                e.kind = "funcref"
                return T.BuiltinRef(f.builtin, f.mode + (DERIV[name],))
            if not isinstance(f, T.FuncRef):
                raise err(TYPE_MISMATCH, f"{name} needs a function, got {f}", e.args[0])
            fi = c.funcs[f.func]
            if fi.substitute and not f.mode:  # `fwd_diff(f)` of f with a primal substitute: of the substitute
                f, fi = T.FuncRef(fi.substitute, f.mode), c.funcs[fi.substitute]
            if not fi.differentiable:
                raise err(NOT_DIFFERENTIABLE, f"'{fi.name}' is not differentiable: mark it [Differentiable]", e.args[0])
            e.kind = "funcref"
            return T.FuncRef(f.func, f.mode + (DERIV[name],))
        if name == "diffPair":
            _count(e, "diffPair", (1, 2))
            if len(callee.targs) == 1 and isinstance(callee.targs[0], A.TypeRef):  # `diffPair<T>(p, d)`
                p = c.resolve(callee.targs[0])
                c.expect_type(e.args[0], p)
            else:
                p = c.expr(e.args[0])
            if T.is_numeric(p) and T.is_int_scalar(T.elem_of(p)):
                p = T.with_elem(p, T.FLOAT)  # as Slang: `let x = 2; diffPair(x)` is a pair of floats
            if not T.is_differentiable(p):
                raise err(TYPE_MISMATCH, f"diffPair needs a differentiable value, got {p}", e.args[0])
            if len(e.args) == 2:
                c.expect_type(e.args[1], T.differential(p))
            e.kind = "diffPair"
            return T.Pair(p)
        if name == "diffPtrPair":
            _count(e, "diffPtrPair", 2)
            p = c.expr(e.args[0])
            if not T.is_ptr_differentiable(p):
                raise err(TYPE_MISMATCH, f"diffPtrPair needs an IDifferentiablePtrType value, got {p}", e.args[0])
            return _constructor(c, e, T.PtrPair(p))
        if name in PAIR_UPDATES:  # `updateDiff(dp, d)` is `dp = diffPair(dp.p, d)`
            _count(e, name, 3 if name == "updatePair" else 2)
            pair, args = e.args[0], e.args[1:]
            parts = args if name == "updatePair" else [A.Member(pair, "p", span=pair.span), args[0]] \
                if name == "updateDiff" else [args[0], A.Member(pair, "d", span=pair.span)]
            value = A.Call(A.Name("diffPair", span=callee.span), parts, span=e.span)
            return c.expr(c.replace(e, A.Assign("=", pair, value, span=e.span)))
        if name == "detach":
            _count(e, "detach", 1)
            e.kind = "detach"
            return c.expr(e.args[0])
        if name == "select":
            return _select(c, e)
        if name == "unused":  # Slang's `unused(x)`: says x is unused on purpose; does nothing
            for a in e.args:
                c.expr(a)
            e.kind = "unused"
            return T.VOID
        if name == "printf":
            if not e.args or not isinstance(e.args[0], A.Str):
                raise err(TYPE_MISMATCH, "printf needs a format string first", e)
            for a in e.args:
                t = c.expr(a)
                if a is not e.args[0] and not T.is_numeric(t) and t != T.NATIVE_STRING:  # (native_strings.py)
                    raise err(TYPE_MISMATCH, f"printf cannot print a value of type {t}", a)
            e.kind = "printf"
            return T.VOID
        if (checked := feature.first("check_call", c, e, name)) is not None:  # (`mul`: matrices.py)
            return checked
        if name in BUILTINS:
            no_diff_meaningless(c, e, name, slang_differentiable(name))
            return check_builtin(c, e, name)
        if name in WAVE_IDENTITY or name in WAVE_CONSTANT:
            return _wave(c, e, name)
        if name == "bit_cast":
            return _bit_cast(c, e, callee)
        if name == "__slang_noop_cast":
            return _noop_cast(c, e, callee)
        if name == "createDynamicObject":
            return _dynamic_object(c, e, callee)
        if name in HLSL_INTERLOCKED:
            return _interlocked(c, e, name)
        if name in GROUP_BARRIERS:
            _count(e, name, 0)
            e.kind, e.target = "barrier", GROUP_BARRIERS[name]
            return T.VOID
        if name == "InterlockedAddF16Emulated":
            return _interlocked_add(c, e, name)
        if name in SCREEN_DERIVATIVES:
            raise err(UNSUPPORTED, f"'{name}' (a fragment stage's screen-space derivative between neighbouring "
                      "pixels) is not supported: diffc runs compute kernels, whose work-items have no pixel quads",
                      callee)
        raise err(UNDEFINED, f"undefined function '{name}'", callee)
    if isinstance(callee, A.TypeExpr):
        t = c.resolve(callee.type)
        if isinstance(t, T.Struct) and INIT in t.method_templates:  # a generic `__init<T : I>(T v)`
            bound = _method_callee(c, e, A.Member(callee, INIT, callee.span, span=callee.span))
            if bound is not None:
                return bound
            callee = e.callee
        elif not (isinstance(t, T.Struct) and INIT in t.methods):
            return _constructor(c, e, t)
        else:
            e.callee = callee = A.Name(t.methods[INIT], span=callee.span)  # `S(...)` calls S's __init
    if isinstance(callee, A.Member) and isinstance(callee.base, A.TypeExpr) and callee.name in ("dzero", "dadd"):
        base = c.resolve(callee.base.type)
        if not (T.is_differentiable(base) or T.is_ptr_differentiable(base)) or (
                isinstance(base, T.Struct) and base.diff_struct is None and base.ptr_differential is None):
            raise err(TYPE_MISMATCH, f"type {base} is not differentiable (it has no {callee.name})", callee)
        t = T.differential(base)
        e.kind = callee.name
        e.target = t
        _count(e, f"{callee.base.type.name}.{callee.name}", 0 if callee.name == "dzero" else 2)
        for a in e.args:
            c.expect_type(a, t)
        return t
    if c.overloads:
        from diffc.frontend.checker.overloads import resolve_call

        resolve_call(c, e)
    f = c.expr(callee)
    if isinstance(f, T.BuiltinRef):
        f = instantiate_builtin(c, f, e)
    if not isinstance(f, T.FuncRef):
        raise err(TYPE_MISMATCH, f"a value of type {f} cannot be called", callee)
    fi = c.funcs[f.func]
    if not f.mode and (fi.bwd_of or fi.fwd_of) and not fi.differentiable:
        # a custom derivative called by name is the derivative it defines: `h(dp, dOut)` with
        # [BackwardDerivative(h)] on g is `bwd_diff(g)(dp, dOut)` (h's IR has g's bwd signature)
        f = T.FuncRef(fi.bwd_of, ("bwd",)) if fi.bwd_of else T.FuncRef(fi.fwd_of, ("fwd",))
        fi = c.funcs[f.func]
    no_diff_meaningless(c, e, fi.name, fi.differentiable or bool(f.mode))
    params, ret = derivative_signature(fi, f.mode)
    what = f"'{fi.owner.sname}'" if fi.decl is not None and fi.decl.name == INIT and fi.owner else f"'{f.name()}'"
    fill_defaults(c, e, params)
    if len(e.args) != len(params):
        raise err(ARG_COUNT, f"{what} expects {len(params)} argument{'s' if len(params) != 1 else ''}, got {len(e.args)}", e)
    for a, p in zip(e.args, params):
        if is_default_arg(a):
            continue  # typed with its function (a pair around it when fill_defaults made one)
        if p.direction in ("out", "inout"):
            got = c.lvalue(a)
            if got != p.ty:
                raise err(TYPE_MISMATCH, f"{what} needs a variable of type {p.ty} for {p.direction} parameter "
                          f"'{p.name}', got {got}", a)
        else:
            if isinstance(a, A.InitList):
                c.init_list(a, p.ty)
                continue
            got = c.expr(a)
            if not T.convertible(got, p.ty):
                raise err(TYPE_MISMATCH, f"{what} expects {p.ty} for parameter '{p.name}', got {got}", a)
    caller = c.func
    if (not f.mode and caller is not None and caller.body_differentiated and not fi.differentiable
            and not e.no_diff and not (caller.bwd_of or caller.fwd_of) and not _can_carry_out(fi)):
        # nothing it returns has a derivative: call it on detached values. (A call that passes a
        # derivative-carrying value to one that can return it is E0006, decided on the IR by the
        # activity analysis: frontend/lowering/derivative_checks.py.)
        e.no_diff = True
    e.kind = "call"
    e.target = (f.func, f.mode, params)
    return ret


def no_diff_meaningless(c: Checking, e: A.Call, name: str, differentiable: bool) -> None:
    """Slang's `no_diff f(x)` makes a call of a non-differentiable function constant; on a call of
    a differentiable one it has no meaning: a warning, and the derivative flows."""
    if e.no_diff and differentiable:
        c.warn(e, f"'no_diff' has no meaning on a call of differentiable function '{name}': its derivative "
                  "still flows (use detach(...) to drop it)")
        e.no_diff = False
        e.no_diff_written = True  # type: ignore[attr-defined]  # the IDifferentiablePtrType twin choice reads it


def _bound_method_derivative(c: Checking, e: A.Call) -> None:
    """`fwd_diff(obj.m)(args)` and `obj.m.fwd_diff(args)`: the derivative of method S::m with obj
    as its `this`, which carries no derivative (a pair with a zero derivative when S is
    differentiable); rewritten in place into `fwd_diff(S::m)(obj, args)`."""
    cal = e.callee
    if isinstance(cal, A.Member) and cal.name in DERIV and isinstance(cal.base, A.Member):
        cal = e.callee = A.Call(A.Name(cal.name, span=cal.name_span), [cal.base], span=cal.span)  # obj.m.fwd_diff
    if not (isinstance(cal, A.Call) and isinstance(cal.callee, A.Name) and cal.callee.id in DERIV
            and c.lookup(cal.callee.id) is None and len(cal.args) == 1):
        return
    target = cal.args[0]
    if not isinstance(target, A.Member) or isinstance(target.base, A.TypeExpr) or (
            isinstance(target.base, A.Name) and c.lookup(target.base.id) is None):
        return
    st = c.expr(target.base)
    if not isinstance(st, T.Struct) or target.name not in st.methods:
        return
    fi = c.funcs[st.methods[target.name]]
    obj = target.base
    cal.args = [A.Member(A.TypeExpr(A.TypeRef(st.sname, fixed=st, span=obj.span), span=obj.span), target.name,
                         target.name_span, span=target.span)]
    if fi.is_static:
        return
    this = fi.params[0]
    if not this.no_diff:
        if DERIV[cal.callee.id] != "fwd":
            raise err(UNSUPPORTED, f"bwd_diff of method '{target.name}' of a value is not supported: its `this` "
                      f"is an inout pair, write bwd_diff({st.sname}::{target.name})(pair, ...)", target)
        obj = A.Call(A.Name("diffPair", span=obj.span), [obj], span=obj.span)
    e.args = [obj] + list(e.args)


def _instantiate_differentiated(c: Checking, e: A.Call) -> None:
    """`bwd_diff(f)(dpx, dpy, dOut)` with f generic: f's instance is inferred from the
    arguments of its derivative (a DifferentialPair<X> argument for a parameter T gives T = X)."""
    inner = e.callee
    while isinstance(inner, A.Call) and isinstance(inner.callee, A.Name) and inner.callee.id in DERIV \
            and len(inner.args) == 1:
        inner = inner.args[0]
    if inner is e.callee or not isinstance(inner, A.Name) or c.lookup(inner.id) is not None:
        return
    if inner.id in c.func_templates and inner.id not in c.funcs:
        inner.id = c.instantiate_func(inner.id, inner, e.args, through_pairs=True)


def _select(c: Checking, e: A.Call) -> T.Type:
    """`select(cond, a, b)`: a where cond holds, else b (lane by lane for a vector condition);
    both sides are evaluated, as in HLSL."""
    _count(e, "select", 3)
    cond = c.expr(e.args[0])
    if T.elem_of(cond) != T.BOOL:
        raise err(TYPE_MISMATCH, f"select needs a bool condition, got {cond}", e.args[0])
    ta, tb = c.expr(e.args[1]), c.expr(e.args[2])
    t = T.common_type(ta, tb)
    if t is None:
        raise err(TYPE_MISMATCH, f"select: cannot combine {ta} and {tb}", e)
    if isinstance(cond, T.Vector) and not (isinstance(t, T.Vector) and t.n == cond.n):
        if not isinstance(t, T.Scalar):
            raise err(TYPE_MISMATCH, f"select: a {cond} condition needs values of {cond.n} lanes, got {t}", e)
        t = T.Vector(t, cond.n)
    e.kind = "select"
    e.target = t
    return t


def _bind_method(e: A.Call, fi, this: A.Expr | None) -> None:
    """Rewrites a method call into a call of the method's function, `this` first."""
    e.callee = A.Name(fi.name, span=e.callee.span)
    if this is not None:
        e.args = [this] + list(e.args)


def _method_callee(c: Checking, e: A.Call, callee: A.Member) -> T.Type | None:
    """`obj.m(...)`, `ptr->m(...)`, `S::m(...)`, `S<4>::m(...)`, and the atomic operations
    `p.max(v)` / `buf[i].add(v)`: binds the call (returning None so the caller checks it as a
    call of a function) or checks an atomic operation (returning its type)."""
    if isinstance(callee.base, A.TypeExpr):
        if callee.name in ("dzero", "dadd"):
            return None
        if callee.name == "dmul" and not isinstance(c.resolve(callee.base.type), T.Struct):
            return _builtin_dmul(c, e, callee)
        const = check_type_method(c, e, callee)
        if const is not None:
            return const
        st = c.resolve(callee.base.type)
        if callee.name == "getPi" and T.is_float_scalar(st):  # IFloat's `T.getPi()`
            _count(e, f"{st}.getPi", 0)
            e.kind, e.target = "getPi", st
            return st
        fname = _method_function(c, e, callee, st)
        if fname is None:
            raise err(UNKNOWN_MEMBER, f"type {st} has no method '{callee.name}'", callee.name_span)
        fi = c.funcs[fname]
        if mixes_static(c, fi.name):
            static_call(e)  # (its static overloads only)
        elif not fi.is_static:
            raise err(TYPE_MISMATCH, f"'{callee.name}' is not static: call it on a value", callee.name_span)
        _bind_method(e, fi, None)
        return None
    bt = c.expr(callee.base)
    if isinstance(bt, T.Pointer) and bt.atomic or (
            isinstance(callee.base, A.Index) and isinstance(callee.base.base.ty, T.Buffer) and callee.base.base.ty.atomic):
        return _atomic_method(c, e, callee, bt)
    if isinstance(bt, T.Scalar) and callee.name in SCALAR_CONVERSIONS:  # IInteger/IFloat's `i.toInt()`
        _count(e, callee.name, 0)
        to = A.TypeRef(SCALAR_CONVERSIONS[callee.name], span=callee.name_span)
        e.callee, e.args = A.TypeExpr(to, span=callee.span), [callee.base]
        return _constructor(c, e, c.resolve(to))
    if (checked := feature.first("check_method", c, e, callee, bt)) is not None:  # (a texture's, a CoopVec's)
        return checked
    if isinstance(bt, T.Array) and callee.name == "getCount":
        return _array_count(c, e, callee, bt)
    st = bt.elem if isinstance(bt, T.Pointer) else bt
    fname = _method_function(c, e, callee, st)
    if fname is not None:
        fi = c.funcs[fname]
        this = None
        if not fi.is_static or mixes_static(c, fi.name):
            this = callee.base
            if isinstance(bt, T.Pointer):
                this = A.Unary("*", callee.base, span=callee.base.span)
                c.expr(this)
            this = bound_this(this)
        _bind_method(e, fi, this)
        return None
    if isinstance(bt, T.Struct | T.Pointer):
        raise err(UNKNOWN_MEMBER, f"type {st} has no method '{callee.name}'", callee.name_span)
    return None


# Slang's functions that replace a part of a DifferentialPair variable
PAIR_UPDATES = ("updateDiff", "updatePrimal", "updatePair")

# the conversions Slang's IInteger and IFloat declare as methods
SCALAR_CONVERSIONS = {"toInt": "int", "toUInt": "uint", "toFloat": "float", "toInt64": "int64_t",
                      "toUInt64": "uint64_t", "toDouble": "double", "toHalf": "half"}


def _method_function(c: Checking, e: A.Call, callee: A.Member, st: T.Type) -> str | None:
    """The function of method `callee.name` of struct st, or None: for a generic method
    (`obj.m<float>(x)`, `S::make<4>()`), the instance the call needs (named `S_m_float`)."""
    if not isinstance(st, T.Struct):
        return None
    named = A.Name(callee.name, targs=callee.targs, span=callee.name_span)
    template = method_template(c, st, callee.name, e.args, named)
    if _means_generic(c, template, st.methods.get(callee.name), e.args, named):
        d = template
        return c.instantiate_func(callee.name, named, e.args, d=d, owner=st)  # type: ignore[arg-type]
    return st.methods.get(callee.name)


def _builtin_dmul(c: Checking, e: A.Call, callee: A.Member) -> T.Type:
    """`float.dmul(s, d)` (IDifferentiable's scaling of a derivative, on a built-in type): `d *
    float(s)`, s any real number."""
    base = c.resolve(callee.base.type)  # type: ignore[attr-defined]
    if not T.is_differentiable(base):
        raise err(TYPE_MISMATCH, f"type {base} is not differentiable (it has no dmul)", callee)
    _count(e, f"{base}.dmul", 2)
    t = T.differential(base)
    scalar = T.elem_of(t)
    factor = A.Call(A.TypeExpr(A.TypeRef(str(scalar), fixed=scalar, span=e.args[0].span), span=e.args[0].span),
                    [e.args[0]], span=e.args[0].span)
    c.expect_type(e.args[1], t)
    return c.expr(c.replace(e, A.Binary("*", e.args[1], factor, span=e.span)))


def _builtin_instead(c: Checking, named: A.Name, args: list[A.Expr]) -> bool:
    """A generic function named like a built-in one (`max<T, N>(Vec<T, N> x, Vec<T, N> y)`) whose
    generic arguments a call's arguments do not give (or that misses its constraints): the call
    means the built-in (`max(x, 0.0)`)."""
    if named.id not in BUILTINS or named.targs:
        return False
    d = c.func_templates[named.id]
    try:
        env, missing = c.generic_env(named.id, named, args, d)
        if not missing:
            c.bind_generics(named.id, d, env, named)
    except FrontendError:
        return True
    return bool(missing)


def _means_generic(c: Checking, template: A.Func | None, plain: str | None, args: list[A.Expr],
                   named: A.Name) -> bool:
    """Whether a call `named(args)` means the generic function (or method) `template` rather than
    the plain overloads of symbol `plain` beside it (`write(float)` and `write<let N: int>(vector<float,
    N>)`): a plain one that takes the arguments as they are wins; else the generic one, unless its
    parameters cannot be inferred from them and a plain one takes them with conversions."""
    if template is None:
        return False
    if plain is None or named.targs:
        return True
    from diffc.frontend.checker.overloads import arg_costs

    costs = arg_costs(c, c.overloads.get(plain, [plain]), args)
    if costs and min(costs) == 0:
        return False
    _, missing = c.generic_env(named.id, named, args, template)
    return not (missing and costs)


def _array_count(c: Checking, e: A.Call, callee: A.Member, bt: T.Array) -> T.Type:
    """`a.getCount()` of an array: its length, an int constant (a Num of that number takes the
    call's place; an array made by a call is refused, as the call would not run)."""
    _count(e, "getCount", 0)
    if any(isinstance(n, A.Call) for n in A.walk(callee.base)):
        raise err(UNSUPPORTED, "getCount() of an array a call returns is not supported: store it in a variable "
                  "first", callee.base)
    c.replace(e, A.Num(bt.n, False, "", span=e.span, ty=T.INT))
    return T.INT


def _atomic_method(c: Checking, e: A.Call, callee: A.Member, bt: T.Type) -> T.Type:
    elem = bt.elem if isinstance(bt, T.Pointer) else bt
    if callee.name not in ATOMIC_KINDS:
        raise err(UNKNOWN_MEMBER, f"Atomic<{elem}> has no method '{callee.name}' (supported: "
                  f"{', '.join(sorted(ATOMIC_KINDS))})", callee.name_span)
    if not isinstance(elem, T.Scalar) or elem.kind == "bool" or T.is_int_scalar(elem) and T.int_bits(elem) != 32:
        raise err(UNSUPPORTED, f"atomic operations on {elem} are not supported", callee)
    _count(e, callee.name, 1)
    c.expect_type(e.args[0], elem)
    e.kind = "atomic_method"
    e.target = (callee.name, elem)
    return elem


def _interlocked_add(c: Checking, e: A.Call, name: str) -> T.Type:
    """`InterlockedAddF16Emulated(ptr, value, out original)`: an atomic add of a half in memory."""
    _count(e, name, 3)
    pt = c.expr(e.args[0])
    if not (isinstance(pt, T.Pointer) and not pt.by_value and pt.elem == T.HALF):
        raise err(TYPE_MISMATCH, f"{name} needs a half*, got {pt}", e.args[0])
    c.expect_type(e.args[1], T.HALF)
    got = c.lvalue(e.args[2])
    if got != T.HALF:
        raise err(TYPE_MISMATCH, f"{name} needs a half variable for the original value, got {got}", e.args[2])
    e.kind = "interlocked_add"
    return T.VOID


# HLSL's work-group barriers -> whether the fence also covers global memory (device memory)
GROUP_BARRIERS = {"GroupMemoryBarrierWithGroupSync": False, "AllMemoryBarrierWithGroupSync": True,
                  "DeviceMemoryBarrierWithGroupSync": True}

# HLSL's atomics on an element of an int/uint buffer -> (signed, unsigned) atomic_rmw kinds
HLSL_INTERLOCKED = {"InterlockedAdd": (1, 1), "InterlockedMax": (4, 5), "InterlockedMin": (7, 8)}


def _interlocked(c: Checking, e: A.Call, name: str) -> T.Type:
    """`InterlockedAdd(buf[i], v [, out original])` on an element of a RWStructuredBuffer<int> or
    <uint>, or on an int or uint in groupshared memory."""
    _count(e, name, (2, 3))
    target = e.args[0]
    t = c.lvalue(target)
    memory = isinstance(target, A.Index) and isinstance(target.base.ty, T.Buffer) or any(h(target) for h in feature.hooks("shared_memory"))
    if not (memory and t in (T.INT, T.UINT)):
        raise err(TYPE_MISMATCH, f"{name} needs an int or uint element of a buffer or of groupshared memory, "
                  f"got {t}", target)
    c.expect_type(e.args[1], t)
    if len(e.args) == 3 and c.lvalue(e.args[2]) != t:
        raise err(TYPE_MISMATCH, f"{name} needs a {t} variable for the original value", e.args[2])
    e.kind = "interlocked"
    e.target = (HLSL_INTERLOCKED[name][t == T.UINT], t)
    return T.VOID


def _wave(c: Checking, e: A.Call, name: str) -> T.Type:
    """Wave intrinsics over waves of one lane (as Slang's CPU target runs them)."""
    e.kind = "wave"
    e.target = name
    if name in WAVE_CONSTANT:
        _count(e, name, 0)
        return WAVE_CONSTANT[name][0]
    _count(e, name, 1)
    t = c.expr(e.args[0])
    if not T.is_numeric(t):
        raise err(TYPE_MISMATCH, f"{name} needs a number, got {t}", e.args[0])
    return t


def _bit_cast(c: Checking, e: A.Call, callee: A.Name) -> T.Type:
    _count(e, "bit_cast", 1)
    if len(callee.targs) != 1 or not isinstance(callee.targs[0], A.TypeRef):
        raise err(ARG_COUNT, "bit_cast needs one type argument: bit_cast<T>(value)", callee)
    dst = c.resolve(callee.targs[0])
    src = c.expr(e.args[0])
    if not (isinstance(src, T.Scalar) and isinstance(dst, T.Scalar)) or _bits(src) != _bits(dst):
        raise err(TYPE_MISMATCH, f"bit_cast from {src} to {dst}: both must be scalars of the same size", e)
    e.kind = "bitcast"
    e.target = dst
    return dst


def _noop_cast(c: Checking, e: A.Call, callee: A.Name) -> T.Type:
    """`__slang_noop_cast<To, From>(x)`: x as To, where the two are one type (T and T.Differential
    under `where T.Differential == T`); `__slang_noop_cast<To>(x)` takes From from x."""
    _count(e, "__slang_noop_cast", 1)
    if len(callee.targs) not in (1, 2) or not all(isinstance(a, A.TypeRef) for a in callee.targs):
        raise err(ARG_COUNT, "__slang_noop_cast needs one or two types: __slang_noop_cast<To, From>(value)", callee)
    dst = c.resolve(callee.targs[0])
    if len(callee.targs) == 2:
        src = c.resolve(callee.targs[1])
        c.expect_type(e.args[0], src)
    else:
        src = c.expr(e.args[0])
    if dst != src:
        raise err(TYPE_MISMATCH, f"__slang_noop_cast from {src} to {dst}: the types must be the same", e)
    e.kind, e.target = "noop_cast", dst
    return dst


def _dynamic_object(c: Checking, e: A.Call, callee: A.Name) -> T.Type:
    """`createDynamicObject<I>(id, data)`: a value of interface I's union (dynamic.py) whose tag is
    id; each implementation laid out as data's leaves holds data, the others zeros (the bits of an
    'any value' reinterpreted, as far as the leaves match)."""
    _count(e, "createDynamicObject", 2)
    if len(callee.targs) not in (1, 2) or not isinstance(callee.targs[0], A.TypeRef) or \
            not c.ifaces.is_interface(callee.targs[0].name):
        raise err(ARG_COUNT, "createDynamicObject needs an interface: createDynamicObject<I>(id, data) or "
                  "createDynamicObject<I, D>(id, data)", callee)
    dyn = c.resolve(callee.targs[0])
    c.expect_type(e.args[0], T.INT)
    if len(callee.targs) == 2:  # the data's type, given
        c.expect_type(e.args[1], c._type_arg(callee, callee.targs[1]))
    else:
        c.expr(e.args[1])
    e.kind, e.target = "dynamic_object", dyn
    return dyn


def _bits(t: T.Scalar) -> int:
    return {"half": 16, "float": 32, "double": 64}.get(t.kind) or T.int_bits(t)


def _can_carry_out(fi) -> bool:
    """Whether a derivative could leave a call of `fi`: through its result or an out/inout
    parameter of a differentiable type. (A non-differentiable struct's constructor cannot: its
    value has no derivative, as in Slang, so such a call is no error.)"""
    if T.is_differentiable(fi.ret) and not fi.ret_no_diff:
        return True
    return any(p.direction != "in" and T.is_differentiable(p.ty) and not p.no_diff for p in fi.params)


def _builtin_ref(c: Checking, a: A.Expr) -> T.Type:
    """The function a derivative operator is applied to; an intrinsic's name (not shadowed by a
    variable or a function) is a BuiltinRef."""
    if isinstance(a, A.Name) and a.id in BUILTINS and c.lookup(a.id) is None and a.id not in c.funcs:
        a.ty = T.BuiltinRef(a.id)
        return a.ty
    return c.expr(a)


def _constructor(c: Checking, e: A.Call, t: T.Type) -> T.Type:
    e.kind = "ctor"
    e.target = t
    if isinstance(t, T.Scalar):
        _count(e, t.name(), 1)
        c.expect_type(e.args[0], t)
        return t
    if isinstance(t, T.Vector):
        total = 0
        for a in e.args:
            at = c.expr(a)
            if not T.is_numeric(at):
                raise err(TYPE_MISMATCH, f"{t} constructor needs numbers, got {at}", a)
            total += at.n if isinstance(at, T.Vector) else 1
        if not (total == t.n or (len(e.args) == 1 and total == 1)):
            raise err(ARG_COUNT, f"{t} constructor needs {t.n} components, got {total}", e)
        return t
    if (checked := feature.first("check_constructor", c, e, t)) is not None:  # (a matrix's, an Optional's)
        return checked
    if isinstance(t, T.Pair):  # DifferentialPair<T>(primal, differential): what diffPair builds
        _count(e, t.name(), 2)
        c.expect_type(e.args[0], t.elem)
        c.expect_type(e.args[1], T.differential(t.elem))
        e.kind = "diffPair"
        return t
    if isinstance(t, T.PtrPair):  # DifferentialPtrPair<T>(primal, differential)
        _count(e, t.name(), 2)
        c.expect_type(e.args[0], t.elem)
        c.expect_type(e.args[1], T.differential(t.elem))
        return t
    if isinstance(t, T.Struct):
        if len(e.args) != len(t.fields):
            raise err(ARG_COUNT, f"{t} constructor expects {len(t.fields)} arguments, got {len(e.args)}", e)
        for a, (_, ft, _) in zip(e.args, t.fields):
            c.expect_type(a, ft)
        return t
    raise err(TYPE_MISMATCH, f"cannot construct a value of type {t}", e)
