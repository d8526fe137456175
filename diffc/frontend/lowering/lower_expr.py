"""Lowering of expressions to arith/math/vector/memref + diff ops. Every value is a list of SSA
leaves (see types.py). The statement-level lowerer (lower.py) mixes this class in."""

from __future__ import annotations

import re

from xdsl.dialects import arith, math, memref, ub, vector
from xdsl.dialects.builtin import (AnyFloat, Float32Type, FloatAttr, IndexType, IntegerAttr, IntegerType, MemRefType,
                                  VectorType)
from xdsl.ir import Operation, SSAValue

from diffc.dialects import diff
from diffc.rules.arith_ext import RemFOp
from diffc.frontend.features.groupshared import storage_type
from diffc.frontend.features.matrices import truncates
from diffc.frontend import ast as A
from diffc.frontend.features import dynamic_buffers, optional, textures
from diffc.frontend import types as T
from diffc.frontend.checker.builtins import MATH_UNARY
from diffc.frontend.checker.symbols import SWIZZLE, Local
from diffc.frontend.errors import TYPE_MISMATCH, UNSUPPORTED, FrontendError

CMP_F = {"==": "oeq", "!=": "une", "<": "olt", ">": "ogt", "<=": "ole", ">=": "oge"}
CMP_S = {"==": "eq", "!=": "ne", "<": "slt", ">": "sgt", "<=": "sle", ">=": "sge"}
CMP_U = {"==": "eq", "!=": "ne", "<": "ult", ">": "ugt", "<=": "ule", ">=": "uge"}
ARITH_F = {"+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp}
ARITH_I = {"+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "/": arith.DivSIOp, "%": arith.RemSIOp,
           "&": arith.AndIOp, "|": arith.OrIOp, "^": arith.XOrIOp, "<<": arith.ShLIOp, ">>": arith.ShRSIOp}
_PRINTF_SPEC = re.compile(r"%%|%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|v\d)?[diuxXfFeEgGcsp]")



def uniform_storage(t: T.Type) -> MemRefType | None:
    """The buffer of a global uniform value of type t (`uniform uint n;`, `float4x4 m;` in a
    cbuffer): its scalars in order, where they are all of one numeric type; else None."""
    if isinstance(t, T.Buffer | T.Pointer) or textures.resource_global(t):
        return None
    scalars = T.scalar_leaves(t)
    if not scalars or len(set(scalars)) != 1 or scalars[0] == T.BOOL:
        return None
    return MemRefType(T.ir_scalar(scalars[0]), [len(scalars)])


class ExprLowering:
    block: object
    funcs: dict

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)  # type: ignore[attr-defined]
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    # ---- constants and conversions ----
    def const(self, value: float | int | bool, t: T.Type) -> list[SSAValue]:
        if isinstance(t, T.Vector):
            s = self.const(value, t.elem)[0]
            return [self.v(vector.BroadcastOp(s, VectorType(T.ir_scalar(t.elem), [t.n])))]
        if isinstance(t, T.Scalar):
            ir = T.ir_scalar(t)
            if T.is_float_scalar(t):
                return [self.v(arith.ConstantOp(FloatAttr(float(value), ir)))]
            if t.kind == "bool":  # any nonzero value is true (`bool b = 2;`, `if (2)`)
                return [self.v(arith.ConstantOp(IntegerAttr(int(bool(value)), ir)))]
            # an int converts as C does: its low bits (`uint8_t b = 300;` is 44)
            return [self.v(arith.ConstantOp(IntegerAttr(int(value) & ((1 << T.int_bits(t)) - 1), ir)))]
        if isinstance(t, T.Array):
            return self.const(value, t.elem) * t.n
        if isinstance(t, T.Matrix):
            return self.const(value, t.as_rows())
        if isinstance(t, T.Struct):
            out: list[SSAValue] = []
            for _, ft, _ in t.fields:
                out += self.const(value, ft)
            return out
        if isinstance(t, T.Pair):
            return [self.v(diff.MakePairOp(x, self.zero_of(x.type))) if isinstance(x.type, diff.PairType)
                    or carries else x for x, carries in zip(self.const(value, t.elem), [c for _, c in T.leaves(t.elem)])]
        if isinstance(t, T.Void | T.Sampler):
            return []
        if isinstance(t, T.Pointer) and not t.by_value and value == 0:  # a pointer's default: null
            return optional.null_pointer(self, t)
        if isinstance(t, T.Buffer):
            # a struct's buffer field before it is assigned (`S s; s.buf = b;`): no value to read,
            # and none is read once the assignment replaces it; one that survives to code
            # generation is reported there, at this declaration
            (ir,) = T.leaf_types(t)
            op = ub.PoisonOp(ir)
            if self.at:
                op.location = self.file_loc(self.at[-1].span[0])
            return [self.v(op)]
        from diffc.frontend.checker.symbols import err
        from diffc.frontend.errors import UNSUPPORTED

        # a local without an initializer whose type holds a buffer or pointer: no value to start from
        raise err(UNSUPPORTED, f"a value of type {t} needs an initializer (it has no default value)",
                  self.at[-1] if self.at else (0, 0))

    def zero_of(self, ir) -> SSAValue:
        if isinstance(ir, diff.PairType):
            return self.v(diff.ZeroOp(diff.differential_type(ir)))
        if isinstance(ir, VectorType):
            s = self.v(arith.ConstantOp(FloatAttr(0.0, ir.element_type)))
            return self.v(vector.BroadcastOp(s, ir))
        if isinstance(ir, IntegerType):
            return self.v(arith.ConstantOp(IntegerAttr(0, ir)))
        return self.v(arith.ConstantOp(FloatAttr(0.0, ir)))

    def convert(self, vals: list[SSAValue], src: T.Type, dst: T.Type) -> list[SSAValue]:
        if isinstance(dst, T.Struct) and (dst.optional_of or dst.optional_diff_of) and src is not dst:
            return optional.lower_convert(self, vals, src, dst)
        if src == T.NULLPTR:
            return optional.null_pointer(self, dst)  # type: ignore[arg-type]
        if isinstance(dst, T.Struct) and T.union_slot(dst, src) is not None:
            return self.into_union(vals, T.union_slot(dst, src), dst)  # type: ignore[arg-type]
        if isinstance(dst, T.Matrix) and src != dst:
            return self.matrix_convert(vals, src, dst)  # type: ignore[attr-defined]
        if src == dst or not (T.is_numeric(src) and T.is_numeric(dst)):
            return vals
        (x,) = vals
        se, de = T.elem_of(src), T.elem_of(dst)
        assert se is not None and de is not None
        if isinstance(src, T.Vector) and isinstance(dst, T.Scalar):
            x = self.v(vector.ExtractOp(x, [0], T.ir_scalar(se)))
            src = se
        if se != de:
            x = self.convert_elem(x, se, de, src)
        if isinstance(dst, T.Vector) and not isinstance(src, T.Vector):
            x = self.v(vector.BroadcastOp(x, VectorType(T.ir_scalar(de), [dst.n])))
        return [x]

    def into_union(self, vals: list[SSAValue], slot: int, dyn: T.Struct,
                   tag: SSAValue | None = None) -> list[SSAValue]:
        """A value of interface union `dyn` (dynamic.py) holding `vals` in field `slot` (the tag
        slot - 1 unless given), zeros elsewhere."""
        out = [tag] if tag is not None else self.const(T.union_tag(dyn, slot), T.INT)
        for i, (_, ft, _) in enumerate(dyn.fields[1:], 1):
            out += vals if i == slot else self.const(0, ft)
        return out

    def convert_elem(self, x: SSAValue, se: T.Scalar, de: T.Scalar, src: T.Type) -> SSAValue:
        out = T.ir_scalar(de) if not isinstance(src, T.Vector) else VectorType(T.ir_scalar(de), [src.n])
        sf, df = T.is_float_scalar(se), T.is_float_scalar(de)
        resized = not sf and not df and T.int_bits(se) != T.int_bits(de)
        if isinstance(src, T.Vector) and (sf != df or de.kind == "bool" or se.kind == "bool" or resized):
            # xDSL's int <-> float casts and comparisons are scalar only: convert lane by lane
            lanes = [self.convert_elem(self.v(vector.ExtractOp(x, [i], T.ir_scalar(se))), se, de, se)
                     for i in range(src.n)]
            return self.build_vector(lanes, T.Vector(de, src.n))[0]
        if de.kind == "bool":
            zero = self.const(0, T.with_elem(src, se))[0]
            if sf:
                return self.v(arith.CmpfOp(x, zero, "une"))
            return self.v(arith.CmpiOp(x, zero, "ne"))
        if sf and df:
            ba = T.RANK[se.kind]
            bb = T.RANK[de.kind]
            return self.v(arith.ExtFOp(x, out) if bb > ba else arith.TruncFOp(x, out))
        if sf:
            return self.v(arith.FPToUIOp(x, out) if T.is_unsigned(de) else arith.FPToSIOp(x, out))
        if df:
            return self.v(arith.UIToFPOp(x, out) if T.is_unsigned(se) else arith.SIToFPOp(x, out))
        if T.int_bits(se) < T.int_bits(de):  # widening keeps the value: zero- or sign-extend by the source
            return self.v(arith.ExtUIOp(x, out) if T.is_unsigned(se) else arith.ExtSIOp(x, out))
        if T.int_bits(se) > T.int_bits(de):  # narrowing keeps the low bits, as C converts
            return self.v(arith.TruncIOp(x, out))
        return x  # int <-> uint of one width: same bits

    def lower_as(self, e: A.Expr, t: T.Type) -> list[SSAValue]:
        if isinstance(e, A.InitList):
            return self.init_list(e, t)
        if isinstance(e, A.Num) and T.is_numeric(t):
            return self.const(_fitting(e.value, t, e), t)
        if isinstance(e, A.Unary) and e.op == "-" and isinstance(e.operand, A.Num) and T.is_numeric(t) \
                and (T.is_floating(t) or not e.operand.is_float):
            return self.const(_fitting(-e.operand.value, t, e), t)
        return self.convert(self.expr(e), e.ty, t)

    def init_list(self, e: A.InitList, t: T.Type) -> list[SSAValue]:
        if isinstance(t, T.Matrix):
            return self.matrix_init_list(e, t)  # type: ignore[attr-defined]
        if isinstance(t, T.Array):
            parts = [t.elem] * t.n
        elif isinstance(t, T.Struct):
            parts = [ft for _, ft, _ in t.fields]
        elif isinstance(t, T.Vector):
            return self.build_vector([self.lower_as(x, t.elem)[0] for x in e.items]
                                     + self.const(0, t.elem) * (t.n - len(e.items)), t)
        elif isinstance(t, T.PtrPair):
            return self.ptr_pair(e.items, t)
        elif isinstance(t, T.Pair):
            p = self.lower_as(e.items[0], t.elem)
            d = self.lower_as(e.items[1], T.differential(t.elem)) if len(e.items) > 1 else None
            return self.make_pairs(p, d, t.elem)
        else:
            return self.lower_as(e.items[0], t) if e.items else self.const(0, t)
        out: list[SSAValue] = []
        for i, pt in enumerate(parts):
            out += self.lower_as(e.items[i], pt) if i < len(e.items) else self.const(0, pt)
        return self.seal(out, t)

    def lose_derivative(self, vals: list[SSAValue], target: A.Expr) -> list[SSAValue]:
        """An assignment to a `no_diff` field: the value's derivative is dropped, which
        derivative_checks refuses where the value carries one (Slang's E41031)."""
        out = []
        for x in vals:
            if diff.is_differentiable_type(x.type):
                x = self.v(diff.DetachOp(x))
                self.lost_derivatives[x.owner] = target
            out.append(x)
        return out

    def seal(self, vals: list[SSAValue], t: T.Type) -> list[SSAValue]:
        """A struct value as built: its `no_diff` fields hold their values without derivative."""
        mask = T.no_diff_leaves(t)
        if not any(mask):
            return vals
        return [self.v(diff.DetachOp(x)) if m and diff.is_differentiable_type(x.type) else x
                for x, m in zip(vals, mask)]

    def build_vector(self, comps: list[SSAValue], t: T.Vector) -> list[SSAValue]:
        vt = VectorType(T.ir_scalar(t.elem), [t.n])
        vec = self.v(vector.BroadcastOp(comps[0], vt))
        for i, c in enumerate(comps[1:], 1):
            vec = self.v(vector.InsertOp(c, vec, [i]))
        return [vec]

    def make_pairs(self, p: list[SSAValue], d: list[SSAValue] | None, elem: T.Type) -> list[SSAValue]:
        out, di = [], 0
        for x, (_, carries) in zip(p, T.leaves(elem)):
            if carries:
                dx = d[di] if d is not None else self.zero_of(x.type)
                di += 1
                out.append(self.v(diff.MakePairOp(x, dx)))
            else:
                out.append(x)
        return out

    def ptr_pair(self, items: list[A.Expr], t: T.PtrPair) -> list[SSAValue]:
        """A DifferentialPtrPair's leaves: the primal's, then the differential's."""
        return self.lower_as(items[0], t.elem) + self.lower_as(items[1], T.differential(t.elem))

    def pair_parts(self, vals: list[SSAValue], elem: T.Type) -> tuple[list[SSAValue], list[SSAValue]]:
        ps, ds = [], []
        for x, (_, carries) in zip(vals, T.leaves(elem)):
            if carries:
                ps.append(self.v(diff.PrimalOp(x)))
                ds.append(self.v(diff.DifferentialOp(x)))
            else:
                ps.append(x)
        return ps, ds

    # ---- expressions ----
    def expr(self, e: A.Expr) -> list[SSAValue]:
        if isinstance(e, A.Num):
            return self.const(_fitting(e.value, e.ty, e), e.ty)
        if isinstance(e, A.BoolLit):
            return self.const(int(e.value), T.BOOL)
        if isinstance(e, A.Name):
            return self.read_name(e)
        if isinstance(e, A.Unary) and e.op == "*":
            return self.deref(e.operand, None, e.ty)
        if isinstance(e, A.Unary) and isinstance(e.ty, T.Matrix):
            return self.matrix_negate(e)  # type: ignore[attr-defined]
        if isinstance(e, A.Unary):
            (x,) = self.expr(e.operand)
            if e.op == "+":
                return [x]
            if e.op == "-":
                if T.is_floating(e.ty):
                    return [self.v(arith.NegfOp(x))]
                return [self.v(arith.SubiOp(self.const(0, e.ty)[0], x))]
            if e.op == "!":
                (b,) = self.convert([x], e.operand.ty, T.with_elem(e.operand.ty, T.BOOL))
                return [self.v(arith.XOrIOp(b, self.const(1, e.ty)[0]))]
            return [self.v(arith.XOrIOp(x, self.const(-1, e.ty)[0]))]
        if isinstance(e, A.Binary):
            return self.binary(e)
        if isinstance(e, A.Ternary):
            return self.ternary(e)
        if isinstance(e, A.Assign):
            return self.assign(e)
        if isinstance(e, A.IncDec):
            old = self.expr(e.target)
            one = A.Num(1, False, span=e.span, ty=T.INT)
            new = self.arith("+" if e.op == "++" else "-", old, self.convert(self.expr(one), T.INT, e.ty), e.ty)
            self.store(e.target, new)
            return new if e.prefix else old
        if isinstance(e, A.Member):
            return self.member(e)
        if isinstance(e, A.Index):
            return self.index(e)
        if isinstance(e, A.Cast):
            if truncates(e.operand.ty, e.ty):
                return self.truncate(self.expr(e.operand), e.operand.ty, e.ty)  # type: ignore[attr-defined]
            return self.convert(self.expr(e.operand), e.operand.ty, e.ty)
        if isinstance(e, A.Call):
            return self.call(e)  # type: ignore[attr-defined]
        if isinstance(e, A.TypeTest):
            return optional.lower_type_test(self, e)
        raise NotImplementedError(type(e).__name__)

    def read_name(self, e: A.Name) -> list[SSAValue]:
        if isinstance(e.ty, T.Null):  # `none`, `nullptr`: no leaves until converted to their use's type
            return []
        sym = e.sym
        assert isinstance(sym, Local)
        if sym.value is not None:  # a `static const`
            return self.lower_as(sym.value, sym.ty)
        if sym.shared:  # work-group memory: its scalars
            return self.load_mem(*self.address(e), sym.ty)
        if sym.is_global and textures.resource_global(sym.ty):
            return textures.read_global(self, sym.name, sym.ty)
        if sym.is_global and isinstance(sym.ty, T.Buffer):
            t = sym.ty
            return [self.v(memref.GetGlobalOp(sym.name, T.leaf_types(t)[0]))]
        if sym.is_global and isinstance(sym.ty, T.Pointer):  # (lower.global_pointer): offset 0
            return [self.v(memref.GetGlobalOp(sym.name, T.leaf_types(sym.ty)[0])), self.index_const(0)]
        if sym.is_global and (storage := uniform_storage(sym.ty)) is not None:  # a uniform value's buffer
            return self.load_mem(self.v(memref.GetGlobalOp(sym.name, storage)), self.index_const(0), sym.ty)
        return list(self.binding(sym).values)  # type: ignore[attr-defined]

    def arith(self, op: str, a: list[SSAValue], b: list[SSAValue], t: T.Type) -> list[SSAValue]:
        if op == "%" and T.is_floating(t):
            return [self.fmod(a[0], b[0])]
        cls = ARITH_F[op] if T.is_floating(t) else ARITH_I[op]
        el = T.elem_of(t)
        if not T.is_floating(t) and el is not None and T.is_int_scalar(el) and T.is_unsigned(el):
            cls = {"/": arith.DivUIOp, "%": arith.RemUIOp, ">>": arith.ShRUIOp}.get(op, cls)
        return [self.v(cls(a[0], b[0]))]

    def binary(self, e: A.Binary) -> list[SSAValue]:
        """A left operand that is itself a plain operation (`a + b + c`: `(a + b) + c`) is
        lowered in a loop, innermost first, each op located at its own node: a flat chain of any
        length takes no Python recursion."""
        chain = [e]  # e, e.lhs, e.lhs.lhs, ... while they are plain operations
        while _plain_binary(chain[-1]) and isinstance(chain[-1].lhs, A.Binary) and _plain_binary(chain[-1].lhs):
            chain.append(chain[-1].lhs)
        vals = None  # the innermost lowers its own left operand (a literal takes the operation's type)
        for node in reversed(chain[1:]):
            self.at.append(node)  # (as expr() would: the ops it emits are located there)
            try:
                vals = self.binary_of(node, vals)
            finally:
                self.at.pop()
        return self.binary_of(e, vals)

    def binary_of(self, e: A.Binary, lhs: list[SSAValue] | None) -> list[SSAValue]:
        """`e` lowered; `lhs`: its left operand's values where they are lowered already."""
        if isinstance(e.lhs.ty, T.Null) or isinstance(e.rhs.ty, T.Null):
            return optional.lower_null_compare(self, e)
        if isinstance(e.ty, T.Pointer):
            return self.pointer_arith(e)
        if isinstance(e.ty, T.Matrix):
            return self.matrix_binary(e)  # type: ignore[attr-defined]

        def left_as(t: T.Type) -> list[SSAValue]:
            return self.lower_as(e.lhs, t) if lhs is None else self.convert(lhs, e.lhs.ty, t)

        if e.op in ("&&", "||"):  # both sides are evaluated: conditions have no side effects here
            (a,) = left_as(T.BOOL)
            (b,) = self.lower_as(e.rhs, T.BOOL)
            return [self.v(arith.AndIOp(a, b) if e.op == "&&" else arith.OrIOp(a, b))]
        c = T.common_type(e.lhs.ty, e.rhs.ty)
        assert c is not None
        a = left_as(c)
        b = self.lower_as(e.rhs, c)
        if e.op in CMP_F:
            return [self.compare(e.op, a[0], b[0], c)]
        return self.arith(e.op, a, b, c)

    def compare(self, op: str, a: SSAValue, b: SSAValue, t: T.Type) -> SSAValue:
        el = T.elem_of(t)
        assert el is not None
        if isinstance(t, T.Vector):  # xDSL's cmpf / cmpi are scalar only: lane by lane
            s = T.ir_scalar(el)
            lanes = [self.compare(op, self.v(vector.ExtractOp(a, [i], s)), self.v(vector.ExtractOp(b, [i], s)), el)
                     for i in range(t.n)]
            return self.build_vector(lanes, T.Vector(T.BOOL, t.n))[0]
        if T.is_floating(t):
            return self.v(arith.CmpfOp(a, b, CMP_F[op]))
        table = CMP_U if T.is_unsigned(el) else CMP_S
        return self.v(arith.CmpiOp(a, b, table[op]))

    def ternary(self, e: A.Ternary) -> list[SSAValue]:
        (c,) = self.lower_as(e.cond, T.BOOL)
        if isinstance(c.type, IntegerType) and (_may_fault(e.a) or _may_fault(e.b)):
            return self.short_circuit(c, e)
        a, b = self.lower_as(e.a, e.ty), self.lower_as(e.b, e.ty)
        return [self.v(arith.SelectOp(c, x, y)) for x, y in zip(a, b)]

    def short_circuit(self, c: SSAValue, e: A.Ternary) -> list[SSAValue]:
        """`c ? a : b` with a scalar condition evaluates one side, as in Slang: the other side's
        derivative must not enter the result (sqrt(x) at x < 0 gives NaN, and 0 * NaN is NaN)."""
        from xdsl.dialects import scf
        from xdsl.ir import Block, Region

        blocks = []
        for side in (e.a, e.b):
            blk = Block()
            saved = self.block  # type: ignore[has-type]
            self.block = blk
            vals = self.lower_as(side, e.ty)
            blk.add_op(scf.YieldOp(*vals))
            self.block = saved
            blocks.append(blk)
        types = [x.type for x in blocks[0].last_op.operands]  # type: ignore[union-attr]
        op = self.emit(scf.IfOp(c, types, Region(blocks[0]), Region(blocks[1])))
        return list(op.results)

    def assign(self, e: A.Assign) -> list[SSAValue]:
        t = e.target.ty
        if e.op == "=":
            new = self.lower_as(e.value, t)
        elif isinstance(t, T.Matrix):
            return self.matrix_compound(e)  # type: ignore[attr-defined]
        else:
            op = e.op[:-1]
            place = self.atomic_place(e.target)
            if place is not None:
                if op not in ("+", "-"):
                    raise FrontendError(UNSUPPORTED, f"'{e.op}' on an Atomic<{t}> element: only += and -= "
                                        "(atomic adds) are supported", *e.span)
                return self.atomic_add(*place, self.lower_as(e.value, t), negate=op == "-")
            c = T.common_type(t, e.value.ty)
            assert c is not None
            old = self.convert(self.expr(e.target), t, c)
            new = self.convert(self.arith(op, old, self.lower_as(e.value, c), c), c, t)
        self.store(e.target, new)
        return new

    def atomic_place(self, target: A.Expr) -> tuple[SSAValue, SSAValue] | None:
        """Memref and index of an element of a `RWStructuredBuffer<Atomic<T>>` or of an
        `Atomic<T>*` (`buf[i]`, `p[i]`, `*p`); None for any other place."""
        if isinstance(target, A.Index) and isinstance(target.base.ty, T.Buffer) and target.base.ty.atomic:
            (buf,) = self.expr(target.base)
            return buf, self.index_value(target.index)
        if isinstance(target, A.Index) and isinstance(target.base.ty, T.Pointer) and target.base.ty.atomic:
            return self.pointer_at(target.base, target.index)
        if (isinstance(target, A.Unary) and target.op == "*" and isinstance(target.operand.ty, T.Pointer)
                and target.operand.ty.atomic):
            return self.pointer_at(target.operand, None)
        return None

    def atomic_add(self, buf: SSAValue, idx: SSAValue, val: list[SSAValue], negate: bool) -> list[SSAValue]:
        x = val[0]
        if negate:
            x = self.v(arith.NegfOp(x) if isinstance(x.type, AnyFloat) else arith.SubiOp(self.zero_of(x.type), x))
        kind = 0 if isinstance(x.type, AnyFloat) else 1  # MLIR AtomicRMWKind: addf = 0, addi = 1
        op = memref.AtomicRMWOp.build(operands=[x, buf, [idx]], result_types=[x.type],
                                      properties={"kind": IntegerAttr(kind, 64)})
        return [self.v(op)]

    def index_value(self, e: A.Expr) -> SSAValue:
        (i,) = self.expr(e)
        return self.v(arith.IndexCastOp(i, IndexType()))

    # ---- pointers: (memref of scalars, index offset in scalars) ----
    def index_const(self, k: int) -> SSAValue:
        return self.v(arith.ConstantOp(IntegerAttr(k, IndexType())))

    def offset_by(self, off: SSAValue, k: int) -> SSAValue:
        return off if k == 0 else self.v(arith.AddiOp(off, self.index_const(k)))

    def load_mem(self, buf: SSAValue, off: SSAValue, t: T.Type) -> list[SSAValue]:
        """The leaves of a value of type t stored as consecutive scalars at buf[off...]."""
        if dynamic_buffers.is_union(t):  # an interface value: Slang's layout of words
            return dynamic_buffers.load_at(self, buf, off, t)  # type: ignore[arg-type]
        if isinstance(t, T.Scalar):
            loaded = self.v(memref.LoadOp.get(buf, [off]))
            if _word_bits(loaded.type, T.ir_scalar(t)):  # a float in a buffer of words (types.word_scalar)
                loaded = self.v(arith.BitcastOp(loaded, T.ir_scalar(t)))
            return [loaded]
        if isinstance(t, T.Vector):
            return self.build_vector([self.load_mem(buf, self.offset_by(off, k), t.elem)[0] for k in range(t.n)], t)
        out: list[SSAValue] = []
        for k, ft in self.mem_parts(t):
            out += self.load_mem(buf, self.offset_by(off, k), ft)
        return out

    def store_mem(self, buf: SSAValue, off: SSAValue, t: T.Type, vals: list[SSAValue]) -> None:
        if isinstance(t, T.Scalar):
            word = buf.type.element_type if isinstance(buf.type, MemRefType) else None
            value = vals[0]
            if word is not None and _word_bits(word, value.type):  # a float into a buffer of words
                value = self.v(arith.BitcastOp(value, word))
            self.emit(memref.StoreOp.get(value, buf, [off]))
            return
        if isinstance(t, T.Vector):
            el = T.ir_scalar(t.elem)
            for k in range(t.n):
                comp = self.v(vector.ExtractOp(vals[0], [k], el))
                self.emit(memref.StoreOp.get(comp, buf, [self.offset_by(off, k)]))
            return
        for k, ft in self.mem_parts(t):
            n = T.leaf_count(ft)
            self.store_mem(buf, self.offset_by(off, k), ft, vals[:n])
            vals = vals[n:]

    @staticmethod
    def mem_parts(t: T.Type) -> list[tuple[int, T.Type]]:
        """(scalar offset, type) of each element of an array or field of a struct."""
        if isinstance(t, T.Matrix):
            t = t.as_rows()
        if isinstance(t, T.Array):
            size = len(T.scalar_leaves(t.elem) or [])
            return [(i * size, t.elem) for i in range(t.n)]
        assert isinstance(t, T.Struct)
        out, k = [], 0
        for _, ft, _ in t.fields:
            out.append((k, ft))
            k += len(T.scalar_leaves(ft) or [])
        return out

    def pointer_at(self, p: A.Expr, index: A.Expr | None) -> tuple[SSAValue, SSAValue]:
        """The memref and offset of `p[index]` (of `*p` when index is None)."""
        buf, off = self.expr(p)
        if index is not None:
            elem = p.ty.elem  # type: ignore[union-attr]
            size = dynamic_buffers.stride(elem) if dynamic_buffers.is_union(elem) else len(T.scalar_leaves(elem) or [])
            i = self.index_value(index)
            if size != 1:
                i = self.v(arith.MuliOp(i, self.index_const(size)))
            off = self.v(arith.AddiOp(off, i))
        return buf, off

    def deref(self, p: A.Expr, index: A.Expr | None, t: T.Type) -> list[SSAValue]:
        if p.ty.by_value:  # type: ignore[union-attr]
            return self.expr(p)  # the struct itself (the checker allows only p[0])
        buf, off = self.pointer_at(p, index)
        return self.load_mem(buf, off, t)

    def pointer_arith(self, e: A.Binary) -> list[SSAValue]:
        p, i = (e.lhs, e.rhs) if isinstance(e.lhs.ty, T.Pointer) else (e.rhs, e.lhs)
        if e.op == "-":
            i = A.Unary("-", i, span=i.span, ty=i.ty)
        return list(self.pointer_at(p, i))

    def pointer_field(self, e: A.Member) -> tuple[SSAValue, SSAValue, T.Type]:
        t = e.base.ty
        assert isinstance(t, T.Pointer) and isinstance(t.elem, T.Struct)
        if dynamic_buffers.is_union(t.elem):  # (its fields are not laid out as its words)
            raise FrontendError(UNSUPPORTED, f"a field of an interface '{t.elem.dynamic_of}' value in memory is not "
                                "supported: read the value (`*p`) first", *e.span)
        i, ft, _ = t.elem.field(e.name)  # type: ignore[misc]
        buf, off = self.expr(e.base)
        return buf, self.offset_by(off, self.mem_parts(t.elem)[i][0]), ft

    def address(self, e: A.Expr) -> tuple[SSAValue, SSAValue]:
        """Memref and scalar offset of an lvalue that lives in memory (see `in_memory`), so that
        `p[i].v0.x` reads or writes one scalar, not the whole struct around it."""
        if isinstance(e, A.Unary):
            return self.pointer_at(e.operand, None)
        if isinstance(e, A.Name):  # a groupshared global: its storage, from its first scalar
            return self.v(memref.GetGlobalOp(e.sym.name, storage_type(e.sym.ty))), self.index_const(0)
        assert isinstance(e, A.Member | A.Index)
        t = e.base.ty
        if T.is_aggregate_buffer(t):  # `buf[i]`: element i's scalars
            (buf,) = self.expr(e.base)
            size = len(T.scalar_leaves(t.elem) or [])
            i = self.index_value(e.index)
            return buf, i if size == 1 else self.v(arith.MuliOp(i, self.index_const(size)))
        if isinstance(t, T.Pointer):
            if isinstance(e, A.Index):
                return self.pointer_at(e.base, e.index)
            buf, off, _ = self.pointer_field(e)
            return buf, off
        buf, off = self.address(e.base)
        if isinstance(e, A.Member) and isinstance(t, T.Struct):
            i, _, _ = t.field(e.name)  # type: ignore[misc]
            return buf, self.offset_by(off, self.mem_parts(t)[i][0])
        if isinstance(e, A.Member):  # one component of a vector
            return buf, self.offset_by(off, SWIZZLE[e.name])
        size = len(T.scalar_leaves(e.ty) or [])
        k = self.const_index(e.index)
        if k is not None:
            return buf, self.offset_by(off, k * size)
        i = self.index_value(e.index)
        if size != 1:
            i = self.v(arith.MuliOp(i, self.index_const(size)))
        return buf, self.v(arith.AddiOp(off, i))

    # ---- members and indexing ----
    def member(self, e: A.Member) -> list[SSAValue]:
        static = getattr(e, "static", None)
        if static is not None:  # a struct's `static const`
            return self.lower_as(static.value, static.ty)
        if in_memory(e):
            return self.load_mem(*self.address(e), e.ty)
        t = e.base.ty
        if isinstance(t, T.Vector | T.Scalar) and in_memory(e.base):  # a swizzle of a vector in memory
            buf, off = self.address(e.base)
            comps = [self.load_mem(buf, self.offset_by(off, SWIZZLE[ch]), T.elem_of(t))[0] for ch in e.name]
            return comps if len(comps) == 1 else self.build_vector(comps, e.ty)
        if isinstance(t, T.Pointer) and not t.by_value:
            buf, off, ft = self.pointer_field(e)
            return self.load_mem(buf, off, ft)
        if isinstance(t, T.Pointer):
            t = t.elem
        base = self.expr(e.base)
        if isinstance(t, T.Pair):
            ps, ds = self.pair_parts(base, t.elem)
            if optional.is_optional(t.elem) and e.name not in ("p", "primal", "getPrimal"):
                return ps[:1] + ds  # its presence is the primal's (optional.py)
            return ps if e.name in ("p", "primal", "getPrimal") else ds
        if isinstance(t, T.PtrPair):
            n = T.leaf_count(t.elem)
            return base[:n] if e.name in ("p", "primal", "getPrimal") else base[n:]
        if isinstance(t, T.Struct):
            i, _, _ = t.field(e.name)  # type: ignore[misc]
            start, n = T.field_offset(t, i)
            return base[start : start + n]
        if isinstance(t, T.Matrix):
            return self.matrix_member(e)  # type: ignore[attr-defined]
        idx = [SWIZZLE[ch] for ch in e.name]
        if isinstance(t, T.Scalar):
            return self.build_vector(base * len(idx), e.ty) if len(idx) > 1 else base
        el = T.ir_scalar(t.elem)
        comps = [self.v(vector.ExtractOp(base[0], [k], el)) for k in idx]
        return comps if len(comps) == 1 else self.build_vector(comps, e.ty)

    def index(self, e: A.Index) -> list[SSAValue]:
        if in_memory(e):
            return self.load_mem(*self.address(e), e.ty)
        t = e.base.ty
        if isinstance(t, T.Pointer):
            return self.deref(e.base, e.index, e.ty)
        if dynamic_buffers.is_interface_buffer(t):
            (buf,) = self.expr(e.base)
            return dynamic_buffers.load(self, buf, self.index_value(e.index), t.elem)
        if isinstance(t, T.Buffer):
            (buf,) = self.expr(e.base)
            return [self.v(memref.LoadOp.get(buf, [self.index_value(e.index)]))]
        if isinstance(t, T.Texture):
            return textures.lower_index(self, e)
        base = self.expr(e.base)
        if isinstance(t, T.Vector):
            (i,) = self.expr(e.index)
            return [self.v(vector.ExtractOp(base[0], [self.index_value_of(i)], T.ir_scalar(t.elem)))]
        if isinstance(t, T.Matrix):
            t = t.as_rows()  # a row per leaf
        n = T.leaf_count(t.elem)
        k = self.const_index(e.index)
        if k is not None:
            return base[k * n : (k + 1) * n]
        (i,) = self.lower_as(e.index, T.INT)
        out = base[0:n]
        for j in range(1, t.n):
            hit = self.v(arith.CmpiOp(i, self.const(j, T.INT)[0], "eq"))
            out = [self.v(arith.SelectOp(hit, base[j * n + q], out[q])) for q in range(n)]
        return out

    def index_value_of(self, i: SSAValue) -> SSAValue:
        return self.v(arith.IndexCastOp(i, IndexType()))

    @staticmethod
    def const_index(e: A.Expr) -> int | None:
        return int(e.value) if isinstance(e, A.Num) and not e.is_float else None

    def store(self, target: A.Expr, vals: list[SSAValue]) -> None:
        """Writes `vals` into an lvalue, rebuilding the enclosing aggregate value."""
        if in_memory(target):
            buf, off = self.address(target)
            self.store_mem(buf, off, target.ty, vals)
            return
        if (isinstance(target, A.Member) and isinstance(target.base.ty, T.Vector)
                and in_memory(target.base)):  # a swizzle of a vector in memory: its components
            buf, off = self.address(target.base)
            el = T.ir_scalar(target.base.ty.elem)
            for j, ch in enumerate(target.name):
                comp = vals[0] if len(target.name) == 1 else self.v(vector.ExtractOp(vals[0], [j], el))
                self.emit(memref.StoreOp.get(comp, buf, [self.offset_by(off, SWIZZLE[ch])]))
            return
        if isinstance(target, A.Name):
            self.binding(target.sym).values = list(vals)  # type: ignore[attr-defined]
            self.ptr_shadows.pop(id(target.sym), None)  # type: ignore[attr-defined]  # no longer the parameter
            return
        if isinstance(target, A.Unary) and target.op == "*":
            buf, off = self.pointer_at(target.operand, None)
            self.store_mem(buf, off, target.ty, vals)
            return
        if isinstance(target, A.Member) and isinstance(target.base.ty, T.Pointer):
            buf, off, ft = self.pointer_field(target)
            self.store_mem(buf, off, ft, vals)
            return
        if isinstance(target, A.Index) and isinstance(target.base.ty, T.Pointer):
            buf, off = self.pointer_at(target.base, target.index)
            self.store_mem(buf, off, target.ty, vals)
            return
        if isinstance(target, A.Member) and isinstance(target.base.ty, T.Matrix):
            self.matrix_store_member(target, vals)  # type: ignore[attr-defined]
            return
        if isinstance(target, A.Member):
            t = target.base.ty
            base = self.expr(target.base)
            if isinstance(t, T.Pair):
                ps, ds = self.pair_parts(base, t.elem)
                if target.name in ("p", "primal"):
                    new = self.make_pairs(vals, ds, t.elem)
                else:
                    new = self.make_pairs(ps, vals[1:] if optional.is_optional(t.elem) else vals, t.elem)
            elif isinstance(t, T.PtrPair):
                n = T.leaf_count(t.elem)
                new = vals + base[n:] if target.name in ("p", "primal") else base[:n] + vals
            elif isinstance(t, T.Struct):
                i, _, nd = t.field(target.name)  # type: ignore[misc]
                start, n = T.field_offset(t, i)
                if nd and t.differentiable:
                    vals = self.lose_derivative(vals, target)
                new = base[:start] + vals + base[start + n :]
            else:
                idx = [SWIZZLE[ch] for ch in target.name]
                if isinstance(t, T.Scalar):
                    new = vals if len(idx) == 1 else base
                else:
                    vec = base[0]
                    el = T.ir_scalar(t.elem)
                    for j, k in enumerate(idx):
                        comp = vals[0] if len(idx) == 1 else self.v(vector.ExtractOp(vals[0], [j], el))
                        vec = self.v(vector.InsertOp(comp, vec, [k]))
                    new = [vec]
            self.store(target.base, new)
            return
        if isinstance(target, A.Index):
            t = target.base.ty
            if isinstance(t, T.Buffer):
                (buf,) = self.expr(target.base)
                self.emit(memref.StoreOp.get(vals[0], buf, [self.index_value(target.index)]))
                return
            if isinstance(t, T.Texture):
                textures.lower_write(self, target, vals)
                return
            base = self.expr(target.base)
            if isinstance(t, T.Vector):
                (i,) = self.expr(target.index)
                new = [self.v(vector.InsertOp(vals[0], base[0], [self.index_value_of(i)]))]
            else:
                if isinstance(t, T.Matrix):
                    t = t.as_rows()
                n = T.leaf_count(t.elem)
                k = self.const_index(target.index)
                if k is not None:
                    new = base[: k * n] + vals + base[(k + 1) * n :]
                else:
                    (i,) = self.lower_as(target.index, T.INT)
                    new = list(base)
                    for j in range(t.n):
                        hit = self.v(arith.CmpiOp(i, self.const(j, T.INT)[0], "eq"))
                        for q in range(n):
                            new[j * n + q] = self.v(arith.SelectOp(hit, vals[q], base[j * n + q]))
            self.store(target.base, new)
            return
        raise NotImplementedError(type(target).__name__)

    # ---- printf ----
    def printf(self, e: A.Call) -> None:
        from xdsl.dialects import printf

        fmt = e.args[0].value  # type: ignore[attr-defined]
        py = []
        pos = 0
        for m in _PRINTF_SPEC.finditer(fmt):
            py.append(fmt[pos : m.start()].replace("{", "{{").replace("}", "}}"))
            py.append("%" if m.group() == "%%" else "{}")
            pos = m.end()
        py.append(fmt[pos:].replace("{", "{{").replace("}", "}}"))
        vals = []
        for a in e.args[1:]:
            vals += self.expr(a)
        op = printf.PrintFormatOp("".join(py), *vals)
        op.attributes["c_format"] = __import__("xdsl.dialects.builtin", fromlist=["StringAttr"]).StringAttr(fmt)
        self.emit(op)

    def fmod(self, x: SSAValue, y: SSAValue) -> SSAValue:
        # C's fmod, exact: x - y * trunc(x / y) rounds x / y first (fmod(1, 1/6) gave 0, not 1/6)
        return self.v(RemFOp(x, y))

    def math_unary(self, name: str, x: SSAValue) -> SSAValue:
        return self.v(getattr(math, MATH_UNARY[name])(x))


def _may_fault(e: A.Expr) -> bool:
    """Whether evaluating `e` may give NaN or Inf where its value is not wanted (a call or a
    division), and has no side effect on variables (which selects over a region would hide)."""
    nodes = list(A.walk(e))
    if any(isinstance(n, A.Assign | A.IncDec) or isinstance(n, A.Call) and n.kind == "call" and any(
            p.direction != "in" for p in n.target[2]) for n in nodes):
        return False
    return any(isinstance(n, A.Call) or isinstance(n, A.Binary) and n.op == "/" for n in nodes)


def _word_bits(word, value) -> bool:
    """Whether a value of IR type `value` sits in memory of `word`s as its bits: an f32 in a
    buffer of i32 words, or an i32 read back as f32 (types.word_scalar)."""
    pair = {type(word), type(value)}
    return word != value and pair == {IntegerType, Float32Type} and \
        32 == (word.width.data if isinstance(word, IntegerType) else value.width.data)


def in_memory(e: A.Expr) -> bool:
    """Whether e is a place in memory reached through a (non-by-value) pointer: `*p`, `p[i]`,
    `p->f`, and fields, single vector components and elements of such places."""
    if isinstance(e, A.Unary) and e.op == "*":
        return isinstance(e.operand.ty, T.Pointer) and not e.operand.ty.by_value
    if isinstance(e, A.Name):  # a groupshared global (frontend/features/groupshared.py)
        return getattr(e.sym, "shared", False)
    if not isinstance(e, A.Member | A.Index) or getattr(e, "static", None) is not None:
        return False
    t = e.base.ty
    if isinstance(t, T.Pointer):
        return not t.by_value
    if isinstance(e, A.Index) and T.is_aggregate_buffer(t):
        return True
    if isinstance(e, A.Member) and not (isinstance(t, T.Struct) or (isinstance(t, T.Vector) and len(e.name) == 1)):
        return False
    if isinstance(e, A.Index) and not isinstance(t, T.Array | T.Vector):
        return False
    return in_memory(e.base)


_FLOAT_MAX = {"half": 65504.0, "float": 3.4028234663852886e38, "double": 1.7976931348623157e308}


def _fitting(value: float | int, t: T.Type, e: A.Expr) -> float | int:
    """A literal converted to `t` at compile time. An integer literal wraps to the type's width
    (as C converts: `uint8_t(300)` is 44); a float one that the type's bits cannot hold (an
    infinite float, 1e30 as an int) is an error where it is written."""
    if T.is_floating(t):
        top = _FLOAT_MAX.get(getattr(getattr(t, "elem", t), "kind", ""), _FLOAT_MAX["double"])
        if not abs(value) <= top:
            raise FrontendError(TYPE_MISMATCH, f"the constant {value} does not fit in {t}", *e.span)
        return value
    el = T.elem_of(t)
    bits = T.int_bits(el) if el is not None and el.kind != "bool" else 32
    if value != value or value in (float("inf"), float("-inf")) or (
            isinstance(value, float) and not -(2 ** (bits - 1)) <= int(value) < 2**bits):
        raise FrontendError(TYPE_MISMATCH, f"the constant {value} does not fit in {t}", *e.span)
    v = int(value)
    if not -(2 ** (bits - 1)) <= v < 2**bits:  # outside what the signless bits hold: keep the low bits
        v = (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    return v if isinstance(value, int) else value


def _plain_binary(e: A.Binary) -> bool:
    """An operation on numbers, vectors or bools (not a pointer's, a matrix's or `none`'s), whose
    left operand binary_of may take lowered already."""
    return not (isinstance(e.lhs.ty, T.Null) or isinstance(e.rhs.ty, T.Null)
                or isinstance(e.ty, T.Pointer | T.Matrix))
