"""Lowering of calls: user functions, fwd_diff/bwd_diff (diff.fwd_diff / diff.bwd_diff, with
Slang's write-back of `.d`), diffPair, detach, intrinsics, constructors, dzero/dadd."""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, vector
from xdsl.dialects.builtin import FunctionType, IntegerAttr, UnitAttr
from xdsl.ir import Block, Region, SSAValue

from diffc.dialects import diff, kernel
from diffc.frontend import ast as A
from diffc.frontend.features import byte_address_buffers, coopvec, cuda_builtins, groupshared, textures
from diffc.frontend import types as T
from diffc.frontend.checker.builtins import ATOMIC_KINDS, WAVE_CONSTANT
from diffc.frontend.checker.symbols import derivative_signature, err, ptr_param
from diffc.frontend.checker.defaults import is_default_arg
from diffc.frontend.errors import UNSUPPORTED
from diffc.frontend.lowering.ptr_types import has_ptr_twin, ptr_twin_name


class CallLowering:
    def call(self, e: A.Call) -> list[SSAValue]:
        vals = self.call_values(e)
        if e.no_diff and e.kind != "call":  # `no_diff` on a non-differentiable intrinsic: a constant
            vals = [self.v(diff.DetachOp(x)) if diff.is_differentiable_type(x.type) else x for x in vals]
        return vals

    def call_values(self, e: A.Call) -> list[SSAValue]:
        k = e.kind
        if k == "printf":
            self.printf(e)
            return []
        if k == "diffPair":
            elem = e.ty.elem
            p = self.lower_as(e.args[0], elem)
            d = self.lower_as(e.args[1], T.differential(elem)) if len(e.args) > 1 else None
            return self.make_pairs(p, d, elem)
        if k == "unused":
            return []
        if k == "barrier":
            self.emit(kernel.BarrierOp(global_fence=e.target))
            return []
        if k == "interlocked":
            kind, t = e.target
            place = e.args[0]
            if isinstance(place, A.Index) and isinstance(place.base.ty, T.Buffer):
                (buf,) = self.expr(place.base)
                idx = self.index_value(place.index)
            else:  # groupshared memory
                buf, idx = self.address(place)
            (x,) = self.lower_as(e.args[1], t)
            old = self.atomic_rmw(kind, x, buf, idx)
            if len(e.args) == 3:
                self.store(e.args[2], [old])
            return []
        if k == "select":
            (c,) = self.lower_as(e.args[0], e.args[0].ty)
            (a,), (b,) = self.lower_as(e.args[1], e.target), self.lower_as(e.args[2], e.target)
            if not isinstance(e.args[0].ty, T.Vector):
                return [self.v(arith.SelectOp(c, a, b))]
            t = e.target  # arith.select takes an i1 condition: lane by lane
            el, i1 = T.ir_scalar(t.elem), T.ir_scalar(T.BOOL)
            lanes = [self.v(arith.SelectOp(self.v(vector.ExtractOp(c, [i], i1)), self.v(vector.ExtractOp(a, [i], el)),
                                           self.v(vector.ExtractOp(b, [i], el)))) for i in range(t.n)]
            return self.build_vector(lanes, t)
        if k == "detach":
            vals = self.expr(e.args[0])
            return [self.v(diff.DetachOp(x)) if diff.is_differentiable_type(x.type) else x for x in vals]
        if k == "builtin":
            return self.builtin(e)
        if k == "ctor":
            return self.matrix_ctor(e, e.target) if isinstance(e.target, T.Matrix) else self.ctor(e)
        if k == "matrix":
            return self.matrix_call(e)
        if k == "float_constant":  # float.getPi()
            return self.const(e.target, e.ty)
        if k == "dzero":
            return self.const(0, e.target)
        if k == "dynamic_object":  # createDynamicObject<I>(id, data)
            (tag,) = self.lower_as(e.args[0], T.INT)
            data = self.expr(e.args[1])
            out = [tag]
            for _, ft, _ in e.target.fields[1:]:
                fits = T.leaf_types(ft) == [x.type for x in data]
                out += data if fits else self.const(0, ft)
            return out
        if k == "getPi":
            return self.const(3.141592653589793, e.target)
        if k == "dadd":
            a, b = self.lower_as(e.args[0], e.ty), self.lower_as(e.args[1], e.ty)
            return [self.v(arith.AddfOp(x, y)) for x, y in zip(a, b)]
        if k == "call":
            return self.user_call(e)
        if k == "atomic_method":
            return self.atomic_method(e)
        if k == "texture":
            return textures.lower_call(self, e)
        if k == "coopvec_store":
            return coopvec.lower_store(self, e)
        if k == "coopvec":
            return coopvec.lower_operation(self, e)
        if k == "byte_buffer":
            return byte_address_buffers.lower_call(self, e)
        if k == "interlocked_add":
            buf, off = self.expr(e.args[0])
            (x,) = self.lower_as(e.args[1], T.HALF)
            self.store(e.args[2], [self.atomic_rmw(0, x, buf, off)])  # addf
            return []
        if k == "wave":
            if e.target in WAVE_CONSTANT:
                ty, value = WAVE_CONSTANT[e.target]
                return self.const(value, ty)
            return self.lower_as(e.args[0], e.ty)
        if k == "cuda_query":
            return cuda_builtins.lower(self, e)
        if k == "address":
            return groupshared.lower_address(self, e)
        if k == "noop_cast":
            return self.lower_as(e.args[0], e.target)
        if k == "bitcast":
            (x,) = self.expr(e.args[0])
            return [self.v(arith.BitcastOp(x, T.ir_scalar(e.target)))]
        raise err(UNSUPPORTED, "a function used as a value must be called", e)

    # ---- user functions and their derivatives ----
    def user_call(self, e: A.Call) -> list[SSAValue]:
        fname, modes, params = e.target
        fi = self.funcs[fname]
        if any(m != "fwd" for m in modes[:-1]):
            raise err(UNSUPPORTED, "only fwd_diff may be nested inside another fwd_diff/bwd_diff", e)
        twin = has_ptr_twin(fi) and (bool(modes) or self.calls_ptr_twin(e, fi))
        base = ptr_twin_name(fname) if twin else fname
        sym = self.deriv_symbol(base, modes[:-1], e) if modes and base in self.func_ops else base
        direct = False  # fwd_diff(f) of a bodiless f with a custom derivative: that derivative, called
        custom = {("fwd",): fi.fwd_custom, ("bwd",): fi.bwd_custom}.get(modes)
        if sym not in self.func_ops and custom in self.func_ops:
            sym, direct = custom, True  # type: ignore[assignment]
        if sym not in self.func_ops:  # declared (`float f(float);`) and never defined
            raise err(UNSUPPORTED, f"calling '{fi.decl.name if fi.decl else fname}', which is declared but never "
                      "defined (a function without a body), is not supported", e)
        target = self.func_ops[sym]
        if modes and modes[-1] == "bwd":
            inner_params, inner_ret = derivative_signature(fi, modes[:-1])
            return self.bwd_call(e, sym, target, inner_params, inner_ret, direct)
        operands: list[SSAValue] = []
        for a, p in zip(e.args, params):
            if p.direction == "in":
                operands += self.lower_as(a, p.ty)
                if twin and not modes and ptr_param(p):
                    operands += self.ptr_shadow(a, fi)
            elif p.direction == "inout":
                operands += self.expr(a)
        if e.no_diff:  # `no_diff f(x)`: the callee sees values without derivatives
            operands = [self.v(diff.DetachOp(x)) if diff.is_differentiable_type(x.type) else x for x in operands]
        if modes and not direct:
            sig = diff.fwd_signature(target)
            op = self.emit(diff.FwdDiffOp(sym, operands, sig.outputs.data))
        else:
            op = self.emit(func.CallOp(sym, operands, target.function_type.outputs.data))
        res = list(op.results)
        n = T.leaf_count(e.ty)
        out, rest = res[:n], res[n:]
        for a, p in zip(e.args, params):
            if p.direction != "in":
                m = T.leaf_count(p.ty)
                self.store(a, rest[:m])
                rest = rest[m:]
        return out

    # ---- IDifferentiablePtrType arguments ----
    def calls_ptr_twin(self, e: A.Call, callee) -> bool:
        """Whether a plain call of `callee` (which has a twin) goes to the twin: inside a twin, or
        in a body that is differentiated, where the derivatives must reach memory."""
        f, twin = self.lowering
        if twin:
            return True
        # `no_diff` (even where it has no meaning for the derivative) keeps the primal call
        if e.no_diff or getattr(e, "no_diff_written", False) or not f.body_differentiated or has_ptr_twin(f):
            return False
        arg = next(a for a, p in zip(e.args, callee.params) if ptr_param(p))
        raise err(UNSUPPORTED, f"'{f.name}' is differentiable but takes no IDifferentiablePtrType parameter "
                  f"(other than no_diff ones), so '{callee.name}' cannot get the Differential of this {arg.ty}: "
                  "pass the value in as such a parameter, or call with no_diff", arg)

    def ptr_shadow(self, a: A.Expr, callee) -> list[SSAValue]:
        """The Differential's leaves of an IDifferentiablePtrType argument inside a twin: known for
        the twin's own such parameters (also as `this`), as long as they are not reassigned, and for
        an array of them written out (`{ a, b }`)."""
        if isinstance(a, A.InitList) and isinstance(a.ty, T.Array) and len(a.items) == a.ty.n:
            return [x for item in a.items for x in self.ptr_shadow(item, callee)]
        sym = a.sym if isinstance(a, A.Name) else None
        shadow = self.ptr_shadows.get(id(sym)) if sym is not None else None
        if shadow is None:
            f, _ = self.lowering
            raise err(UNSUPPORTED, f"differentiable '{callee.name}' needs the Differential of this {a.ty}, which "
                      f"'{f.name}' only knows for its unchanged IDifferentiablePtrType parameters", a)
        return list(shadow)

    def bwd_call(self, e: A.Call, sym: str, target, params, ret, direct: bool = False) -> list[SSAValue]:
        """bwd_diff(f)(args): diff.bwd_diff of f (`direct`: a call of `sym`, f's custom backward
        derivative, whose signature is that of bwd_diff(f))."""
        args = iter(e.args)
        primals: list[SSAValue] = []
        douts: list[SSAValue] = []
        writes: list[tuple[A.Expr, T.Type, list[SSAValue]]] = []
        later: list[list[SSAValue]] = []
        for p in params:
            d = T.is_differentiable(p.ty) and not p.no_diff
            if not d:
                if p.direction != "out":
                    primals += self.lower_as(next(args), p.ty)
                continue
            a = next(args)
            if p.direction == "out":
                later.append(self.lower_as(a, T.differential(p.ty)))
                continue
            ps, ds = self.pair_parts(self.expr(a), p.ty)
            primals += ps
            writes.append((a, p.ty, ps))
            if p.direction == "inout":
                later.append(ds)
        if T.is_differentiable(ret):
            douts += self.lower_as(next(args), T.differential(ret))
        for ds in later:
            douts += ds
        if direct:
            op = self.emit(func.CallOp(sym, primals + douts, target.function_type.outputs.data))
        else:
            op = self.emit(diff.BwdDiffOp(sym, primals + douts, diff.bwd_signature(target).outputs.data))
        grads = list(op.results)
        for a, ty, ps in writes:  # Slang: the gradient overwrites `.d`
            n = sum(1 for _, c in T.leaves(ty) if c)
            if not is_default_arg(a):  # an omitted argument's gradient goes nowhere
                self.store(a, self.make_pairs(ps, grads[:n], ty))
            grads = grads[n:]
        return []

    def deriv_symbol(self, fname: str, modes: tuple[str, ...], e: A.Expr) -> str:
        """A function equal to fwd_diff^k(f), so that a derivative of it can name a symbol."""
        if not modes:
            return fname
        name = f"{fname}__" + "_".join(modes)
        if name in self.func_ops:
            return name
        inner = self.deriv_symbol(fname, modes[:-1], e)
        sig = diff.fwd_signature(self.func_ops[inner])
        block = Block(arg_types=sig.inputs.data)
        call = diff.FwdDiffOp(inner, list(block.args), sig.outputs.data)
        block.add_ops([call, func.ReturnOp(*call.results)])
        op = func.FuncOp(name, FunctionType.from_lists(sig.inputs.data, sig.outputs.data), Region(block),
                         "private")
        op.attributes[diff.DIFFERENTIABLE] = UnitAttr()
        self.func_ops[name] = op
        self.extra_funcs.append(op)
        return name

    # ---- atomics ----
    def atomic_rmw(self, kind: int, x: SSAValue, buf: SSAValue, idx: SSAValue) -> SSAValue:
        op = memref.AtomicRMWOp.build(operands=[x, buf, [idx]], result_types=[x.type],
                                      properties={"kind": IntegerAttr(kind, 64)})
        return self.v(op)

    def atomic_method(self, e: A.Call) -> list[SSAValue]:
        """`p.max(v)` on an `Atomic<T>*`, `buf[i].add(v)` on a buffer of atomics: the old value."""
        name, elem = e.target
        base = e.callee.base
        if isinstance(base.ty, T.Pointer):
            buf, idx = self.expr(base)
        else:
            (buf,) = self.expr(base.base)
            idx = self.index_value(base.index)
        (x,) = self.lower_as(e.args[0], elem)
        kinds = ATOMIC_KINDS[name]
        kind = kinds[0] if T.is_float_scalar(elem) else kinds[2] if elem == T.UINT else kinds[1]
        return [self.atomic_rmw(kind, x, buf, idx)]

    # ---- constructors ----
    def ctor(self, e: A.Call) -> list[SSAValue]:
        t = e.target
        if isinstance(t, T.PtrPair):
            return self.ptr_pair(e.args, t)
        if isinstance(t, T.Scalar):
            return self.lower_as(e.args[0], t)
        if isinstance(t, T.Struct) and t.optional_of is not None:  # `Optional<T>(x)`, `Optional<T>()`
            return self.lower_as(e.args[0], t) if e.args else self.const(0, t)
        if isinstance(t, T.Struct):
            out: list[SSAValue] = []
            for a, (_, ft, _) in zip(e.args, t.fields):
                out += self.lower_as(a, ft)
            return self.seal(out, t)
        assert isinstance(t, T.Vector)
        if len(e.args) == 1 and not isinstance(e.args[0].ty, T.Vector):
            return self.lower_as(e.args[0], t)
        comps: list[SSAValue] = []
        for a in e.args:
            at = a.ty
            if isinstance(at, T.Vector):
                (x,) = self.convert(self.expr(a), at, T.Vector(t.elem, at.n))
                el = T.ir_scalar(t.elem)
                comps += [self.v(vector.ExtractOp(x, [i], el)) for i in range(at.n)]
            else:
                comps += self.lower_as(a, t.elem)
        return self.build_vector(comps, t)
