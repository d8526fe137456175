"""Lowering of intrinsic calls to arith / math / vector ops. Derivatives then come from the rules
of those ops (diffc/rules/), in both modes, so an intrinsic needs no rule of its own unless it
lowers to an op that has none. Elementwise intrinsics apply to a matrix row by row.

xDSL's arith.cmpf / cmpi are scalar only, so comparisons on vectors (sign, step, isnan, any, ...)
go lane by lane."""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math, vector
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import SSAValue

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.builtins import BUILTINS, MATH_UNARY
from diffc.frontend.checker.symbols import err
from diffc.frontend.errors import UNSUPPORTED


class BuiltinLowering:
    def builtin(self, e: A.Call) -> list[SSAValue]:
        name, ct = e.target
        b = BUILTINS[name]
        kinds = b.params or "T" * b.arity
        el = ct.elem if isinstance(ct, T.Matrix) else T.elem_of(ct)
        xs = [self.lower_as(a, el if k == "S" else ct) for a, k in zip(e.args, kinds) if k != "o"]
        if isinstance(ct, T.Matrix):  # row by row: each leaf is a row
            rows = [self.builtin_values(name, [x[r] for x in xs], ct.row, e) for r in range(ct.rows)]
            outs = [[row[k] for row in rows] for k in range(len(rows[0]))]
        else:
            outs = [[v] for v in self.builtin_values(name, [x[0] for x in xs], ct, e)]
        if b.result != "void":
            return outs[0]
        for a, vals in zip([a for a, k in zip(e.args, kinds) if k == "o"], outs):  # sincos
            self.store(a, vals)
        return []

    def builtin_values(self, name: str, xs: list[SSAValue], ct: T.Type, e: A.Expr) -> list[SSAValue]:
        """The result leaves (the out values, for sincos) of intrinsic `name` on values of type ct
        (a scalar or vector; a matrix's row)."""
        fl = T.is_floating(ct)
        el = T.elem_of(ct)
        assert el is not None
        c = lambda v: self.const(v, ct)[0]  # noqa: E731
        if name in MATH_UNARY:
            return [self.math_unary(name, xs[0])]
        if name == "abs":
            return [self.v(math.AbsFOp(xs[0]) if fl else math.AbsIOp(xs[0]))]
        if name in ("min", "max"):
            return [self.minmax(name, xs[0], xs[1], ct)]
        if name == "clamp":
            return [self.clamp(xs[0], xs[1], xs[2], ct)]
        if name == "saturate":
            return [self.clamp(xs[0], c(0.0), c(1.0), ct)]
        if name == "frac":
            return [self.v(arith.SubfOp(xs[0], self.v(math.FloorOp(xs[0]))))]
        if name == "rcp":
            return [self.v(arith.DivfOp(c(1.0), xs[0]))]
        if name in ("radians", "degrees"):
            k = pymath.pi / 180.0 if name == "radians" else 180.0 / pymath.pi
            return [self.v(arith.MulfOp(xs[0], c(k)))]
        if name == "sincos":
            return [self.v(math.SinOp(xs[0])), self.v(math.CosOp(xs[0]))]
        if name == "pow":
            return [self.v(math.PowFOp(xs[0], xs[1]))]
        if name == "atan2":
            return [self.v(math.Atan2Op(xs[0], xs[1]))]
        if name == "copysign":
            return [self.v(math.CopySignOp(xs[0], xs[1]))]
        if name == "fmod":
            return [self.fmod(xs[0], xs[1])]
        if name == "fma":
            return [self.v(math.FmaOp(xs[0], xs[1], xs[2]))]
        if name == "mad":
            return [self.v(arith.AddfOp(self.v(arith.MulfOp(xs[0], xs[1])), xs[2]))]
        if name == "lerp":
            d = self.v(arith.SubfOp(xs[1], xs[0]))
            return [self.v(arith.AddfOp(xs[0], self.v(arith.MulfOp(d, xs[2]))))]
        if name == "smoothstep":
            num = self.v(arith.SubfOp(xs[2], xs[0]))
            den = self.v(arith.SubfOp(xs[1], xs[0]))
            t = self.minmax("min", self.minmax("max", self.v(arith.DivfOp(num, den)), c(0.0), ct), c(1.0), ct)
            poly = self.v(arith.SubfOp(c(3.0), self.v(arith.MulfOp(c(2.0), t))))
            return [self.v(arith.MulfOp(self.v(arith.MulfOp(t, t)), poly))]
        if name in ("sign", "step", "isnan", "isinf", "isfinite"):
            return [self.lanewise(name, xs, ct)]
        if name in ("any", "all"):
            return [self.any_all(name, xs[0], ct)]
        if name in ("asfloat", "asint", "asuint"):
            to = {"asfloat": T.FLOAT, "asint": T.INT, "asuint": T.UINT}[name]
            if el == to or {el.kind, to.kind} == {"int", "uint"}:
                return [xs[0]]  # int <-> uint: the same bits
            return [self.v(arith.BitcastOp(xs[0], T.leaves(T.with_elem(ct, to))[0][0]))]
        if name == "dot":
            return [self.dot(xs[0], xs[1], ct)]
        if name == "length":
            return [self.length(xs[0], ct)]
        if name == "distance":
            return [self.length(self.v(arith.SubfOp(xs[0], xs[1])), ct)]
        if name == "normalize":
            if not isinstance(ct, T.Vector):
                return [self.v(arith.DivfOp(xs[0], self.v(math.AbsFOp(xs[0]))))]
            inv = self.v(math.RsqrtOp(self.dot(xs[0], xs[0], ct)))
            return [self.v(arith.MulfOp(xs[0], self.convert([inv], el, ct)[0]))]
        if name == "reflect":
            d = self.dot(xs[1], xs[0], ct)
            two_d = self.v(arith.MulfOp(self.const(2.0, el)[0], d))
            return [self.v(arith.SubfOp(xs[0], self.v(arith.MulfOp(self.convert([two_d], el, ct)[0], xs[1]))))]
        if name == "refract":
            return [self.refract(xs[0], xs[1], xs[2], ct)]
        if name == "cross":
            s = T.ir_scalar(el)
            a = [self.v(vector.ExtractOp(xs[0], [i], s)) for i in range(3)]
            b = [self.v(vector.ExtractOp(xs[1], [i], s)) for i in range(3)]

            def m(i, j):
                return self.v(arith.SubfOp(self.v(arith.MulfOp(a[i], b[j])), self.v(arith.MulfOp(a[j], b[i]))))

            return self.build_vector([m(1, 2), m(2, 0), m(0, 1)], ct)
        raise err(UNSUPPORTED, f"intrinsic '{name}' is not supported", e)

    def refract(self, i: SSAValue, n: SSAValue, eta: SSAValue, t: T.Vector) -> SSAValue:
        """HLSL's refract: k = 1 - eta^2 (1 - dot(n, i)^2); zero when k < 0 (total internal
        reflection), else eta i - (eta dot(n, i) + sqrt(k)) n."""
        el = t.elem
        one = self.const(1.0, el)[0]
        d = self.dot(n, i, t)
        k = self.v(arith.SubfOp(one, self.v(arith.MulfOp(self.v(arith.MulfOp(eta, eta)),
                                                          self.v(arith.SubfOp(one, self.v(arith.MulfOp(d, d))))))))
        zero = self.const(0.0, el)[0]
        root = self.v(math.SqrtOp(self.v(arith.MaximumfOp(k, zero))))
        coef = self.v(arith.AddfOp(self.v(arith.MulfOp(eta, d)), root))
        splat = lambda x: self.convert([x], el, t)[0]  # noqa: E731
        out = self.v(arith.SubfOp(self.v(arith.MulfOp(splat(eta), i)), self.v(arith.MulfOp(splat(coef), n))))
        tir = self.v(arith.CmpfOp(k, zero, "olt"))
        return self.v(arith.SelectOp(tir, self.const(0.0, t)[0], out))

    def lanewise(self, name: str, xs: list[SSAValue], t: T.Type) -> SSAValue:
        if not isinstance(t, T.Vector):
            return self.compare_builtin(name, xs)
        s = T.ir_scalar(t.elem)
        lanes = [self.compare_builtin(name, [self.v(vector.ExtractOp(x, [i], s)) for x in xs]) for i in range(t.n)]
        out = {"step": t.elem, "sign": T.INT}.get(name, T.BOOL)
        return self.build_vector(lanes, T.Vector(out, t.n))[0]

    def compare_builtin(self, name: str, xs: list[SSAValue]) -> SSAValue:
        """sign (an int), step(edge, x) (0 or 1), isnan / isinf / isfinite (bools) of scalars."""
        t = xs[0].type
        if name == "step":
            return self.v(arith.UIToFPOp(self.v(arith.CmpfOp(xs[1], xs[0], "oge")), t))
        if name == "isnan":
            return self.v(arith.CmpfOp(xs[0], xs[0], "uno"))
        if name in ("isinf", "isfinite"):
            inf = self.v(arith.ConstantOp(FloatAttr(float("inf"), t)))
            return self.v(arith.CmpfOp(self.v(math.AbsFOp(xs[0])), inf, "oeq" if name == "isinf" else "olt"))
        i32 = T.ir_scalar(T.INT)
        if isinstance(t, IntegerType):  # sign of an int
            zero = self.v(arith.ConstantOp(IntegerAttr(0, t)))
            gt, lt = arith.CmpiOp(xs[0], zero, "sgt"), arith.CmpiOp(xs[0], zero, "slt")
        else:
            zero = self.v(arith.ConstantOp(FloatAttr(0.0, t)))
            gt, lt = arith.CmpfOp(xs[0], zero, "ogt"), arith.CmpfOp(xs[0], zero, "olt")
        pos = self.v(arith.ExtUIOp(self.v(gt), i32))
        neg = self.v(arith.ExtUIOp(self.v(lt), i32))
        return self.v(arith.SubiOp(pos, neg))

    def any_all(self, name: str, x: SSAValue, t: T.Type) -> SSAValue:
        """any / all: whether some / every lane is nonzero (true)."""
        el = T.elem_of(t)
        assert el is not None
        s = T.ir_scalar(el)
        lanes = [self.v(vector.ExtractOp(x, [i], s)) for i in range(t.n)] if isinstance(t, T.Vector) else [x]
        if el != T.BOOL:
            zero = self.const(0, el)[0]
            lanes = [self.v(arith.CmpfOp(v, zero, "une") if T.is_float_scalar(el) else arith.CmpiOp(v, zero, "ne"))
                     for v in lanes]
        acc = lanes[0]
        for v in lanes[1:]:
            acc = self.v(arith.OrIOp(acc, v) if name == "any" else arith.AndIOp(acc, v))
        return acc

    def clamp(self, x: SSAValue, lo: SSAValue, hi: SSAValue, t: T.Type) -> SSAValue:
        """Floats: `x < lo ? lo : x > hi ? hi : x`, so that x keeps its derivative on the whole
        closed range (Slang's convention at the edges, where the derivative is not defined;
        min(max(...)) would split it there)."""
        if not T.is_floating(t):
            return self.minmax("min", self.minmax("max", x, lo, t), hi, t)
        if isinstance(t, T.Vector):
            s = T.ir_scalar(t.elem)
            lanes = [self.clamp(*(self.v(vector.ExtractOp(v, [i], s)) for v in (x, lo, hi)), t.elem) for i in range(t.n)]
            return self.build_vector(lanes, t)[0]
        low = self.v(arith.SelectOp(self.v(arith.CmpfOp(x, lo, "olt")), lo, x))
        return self.v(arith.SelectOp(self.v(arith.CmpfOp(x, hi, "ogt")), hi, low))

    def minmax(self, which: str, a: SSAValue, b: SSAValue, t: T.Type) -> SSAValue:
        if T.is_floating(t):
            cls = arith.MinimumfOp if which == "min" else arith.MaximumfOp
        elif T.elem_of(t) is not None and T.is_unsigned(T.elem_of(t)):
            cls = arith.MinUIOp if which == "min" else arith.MaxUIOp
        else:
            cls = arith.MinSIOp if which == "min" else arith.MaxSIOp
        return self.v(cls(a, b))

    def dot(self, a: SSAValue, b: SSAValue, t: T.Type) -> SSAValue:
        prod = self.v(arith.MulfOp(a, b))
        if not isinstance(t, T.Vector):
            return prod
        s = T.ir_scalar(t.elem)
        acc = self.v(vector.ExtractOp(prod, [0], s))
        for i in range(1, t.n):
            acc = self.v(arith.AddfOp(acc, self.v(vector.ExtractOp(prod, [i], s))))
        return acc

    def length(self, x: SSAValue, t: T.Type) -> SSAValue:
        if not isinstance(t, T.Vector):
            return self.v(math.AbsFOp(x))
        return self.v(math.SqrtOp(self.dot(x, x, t)))

