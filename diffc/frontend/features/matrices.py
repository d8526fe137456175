"""Matrices (`floatRxC`, `matrix<T, R, C>`): type checking and lowering.

A matrix is its R rows (types.Matrix): each row one leaf, a `vector<C x T>` (a scalar when C is
1). Everything here lowers to arith / vector ops on those rows, so the derivative rules of
vector.extract / insert / broadcast and elementwise arith carry derivatives through matrices
in both modes. HLSL's semantics: `*` is elementwise, `mul` is the matrix product with vectors
taken as rows on the left (mul(v, M) = v^T M) and columns on the right (mul(M, v) = M v)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xdsl.dialects import arith, vector
from xdsl.ir import SSAValue

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNKNOWN_MEMBER, UNSUPPORTED

from diffc.frontend.feature import Feature
if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

MATRIX_NAME = re.compile(r"^(float|half|double|int|uint|bool)([1-4])x([1-4])$")
MATRIX_FUNCS = {"mul", "transpose", "determinant"}
ELEMENTWISE = {"+", "-", "*", "/", "%"}
# `_m01` (row 0, column 1, from zero) and `_12` (row 1, column 2, from one), repeated for a vector
_MEMBER_PART = re.compile(r"_m([0-3])([0-3])|_([1-4])([1-4])")


def _err(code: str, msg: str, node):
    from diffc.frontend.checker.symbols import err

    return err(code, msg, node)


def _promote(a: T.Scalar, b: T.Scalar) -> T.Scalar:
    return a if T.RANK[a.kind] >= T.RANK[b.kind] else b


def _vector_or_scalar(e: T.Scalar, n: int) -> T.Type:
    return T.Vector(e, n) if n > 1 else e


# ---- checking ---------------------------------------------------------------------------------


def resolve(c: Checking, name: str, t: A.TypeRef) -> T.Matrix | None:
    """The matrix type `name` spells (`float3x3`, `matrix<float, 3, 3>`), or None if it is none."""
    m = MATRIX_NAME.match(name)
    if m:
        return T.Matrix(T.Scalar(m.group(1)), int(m.group(2)), int(m.group(3)))
    if name != "matrix":
        return None
    # sizes: literals or `static const` ints (`matrix<float, N, D>`)
    sizes = [c.int_arg(n) for n in t.args[1:]] if len(t.args) == 3 else []
    if len(sizes) != 2 or None in sizes or not isinstance(t.args[0], A.TypeRef):
        raise _err(TYPE_MISMATCH, "matrix<T, R, C> needs an element type and two compile-time int sizes", t)
    elem = c.resolve(t.args[0])
    rows, cols = sizes
    # more than 4 rows (of at most 4 columns: rows are vectors) as Slang's CUDA target allows
    if not isinstance(elem, T.Scalar) or not (1 <= rows and 1 <= cols <= 4) or rows * cols > T.MAX_VALUE_SCALARS:
        raise _err(TYPE_MISMATCH, f"matrix<{elem}, {rows}, {cols}>: the element must be a scalar type, the "
                   f"columns 1 to 4 and the rows 1 or more (at most {T.MAX_VALUE_SCALARS} elements)", t)
    return T.Matrix(elem, rows, cols)


def check_binary(e: A.Binary, a: T.Type, b: T.Type) -> T.Type:
    """`m + n`, `m * 2.0`, ...: elementwise on matrices of one shape, or a matrix and a scalar."""
    if e.op not in ELEMENTWISE:
        raise _err(TYPE_MISMATCH, f"operator '{e.op}' is not defined on matrices ({a} and {b})", e)
    if isinstance(a, T.Matrix) and isinstance(b, T.Matrix):
        if (a.rows, a.cols) != (b.rows, b.cols):
            raise _err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {a} and {b}: the shapes differ", e)
        return T.Matrix(_promote(a.elem, b.elem), a.rows, a.cols)
    m, other = (a, b) if isinstance(a, T.Matrix) else (b, a)
    assert isinstance(m, T.Matrix)
    if isinstance(other, T.Scalar):
        return T.Matrix(_promote(m.elem, other), m.rows, m.cols)
    hint = ": use mul() for the matrix product" if e.op == "*" and isinstance(other, T.Vector) else ""
    raise _err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {a} and {b}{hint}", e)


def compound_ok(op: str, t: T.Matrix, v: T.Type) -> bool:
    """Whether `m op= v` is elementwise on m's shape (a scalar, or a matrix of that shape)."""
    same_shape = isinstance(v, T.Matrix) and (v.rows, v.cols) == (t.rows, t.cols)
    return op[:-1] in ELEMENTWISE and (isinstance(v, T.Scalar) or same_shape)


def check_row_index(t: T.Matrix, index: A.Expr) -> None:
    """A constant row index must name a row (a runtime one selects among the rows)."""
    if isinstance(index, A.Num) and not index.is_float and not 0 <= int(index.value) < t.rows:
        raise _err(TYPE_MISMATCH, f"row {int(index.value)} is out of range for {t} (rows 0 to {t.rows - 1})", index)


def member(t: T.Matrix, name: str, node) -> T.Type | None:
    """The type of `m._m01` / `m._12` / `m._m00_m11` (None when `name` is no such member)."""
    cells = member_cells(name)
    if cells is None:
        return None
    for r, col in cells:
        if r >= t.rows or col >= t.cols:
            raise _err(UNKNOWN_MEMBER, f"type {t} has no element ({r}, {col}) in '{name}'", node)
    return _vector_or_scalar(t.elem, len(cells))


def member_cells(name: str) -> list[tuple[int, int]] | None:
    cells, pos = [], 0
    while pos < len(name):
        m = _MEMBER_PART.match(name, pos)
        if m is None:
            return None
        if m.group(1) is not None:
            cells.append((int(m.group(1)), int(m.group(2))))
        else:
            cells.append((int(m.group(3)) - 1, int(m.group(4)) - 1))
        pos = m.end()
    return cells if 0 < len(cells) <= 4 else None


def check_call(c: Checking, e: A.Call, name: str) -> T.Type:
    from diffc.frontend.checker.symbols import count_args as _count

    _count(e, name, 2 if name == "mul" else 1)
    ts = [c.expr(a) for a in e.args]
    for a, t in zip(e.args, ts):
        if not (T.is_numeric(t) or isinstance(t, T.Matrix)):
            raise _err(TYPE_MISMATCH, f"{name} needs numbers, vectors or matrices, got {t}", a)
    e.kind = "matrix"
    if name in ("transpose", "determinant"):
        (m,) = ts
        if not isinstance(m, T.Matrix):
            raise _err(TYPE_MISMATCH, f"{name} needs a matrix, got {m}", e.args[0])
        e.target = (name, [m])
        if name == "transpose":
            if m.rows > 4:
                raise _err(UNSUPPORTED, f"transpose of {m} (more than 4 rows) is not supported", e)
            return T.Matrix(m.elem, m.cols, m.rows)
        if m.rows != m.cols:
            raise _err(TYPE_MISMATCH, f"determinant needs a square matrix, got {m}", e.args[0])
        return m.elem
    a, b = ts
    elem = _promote(_elem(a), _elem(b))
    if isinstance(a, T.Scalar) or isinstance(b, T.Scalar):  # a scalar scales the other operand
        other = b if isinstance(a, T.Scalar) else a
        out = _with_elem(other, elem)
        e.target = ("scale", [out, out])
        return out
    ra, ca = _shape(a, left=True)
    rb, cb = _shape(b, left=False)
    if ca != rb:
        raise _err(TYPE_MISMATCH, f"mul cannot multiply {a} by {b}: {ca} column{'s' if ca != 1 else ''} "
                   f"against {rb} row{'s' if rb != 1 else ''}", e)
    e.target = ("mul", [_with_elem(a, elem), _with_elem(b, elem)])
    if isinstance(a, T.Vector) and isinstance(b, T.Vector):
        return elem  # the dot product
    if isinstance(a, T.Vector):
        return _vector_or_scalar(elem, cb)
    if isinstance(b, T.Vector):
        if ra > 4:
            raise _err(UNSUPPORTED, f"mul of {a} (more than 4 rows) by a vector is not supported", e)
        return _vector_or_scalar(elem, ra)
    return T.Matrix(elem, ra, cb)


def _elem(t: T.Type) -> T.Scalar:
    if isinstance(t, T.Matrix):
        return t.elem
    e = T.elem_of(t)
    assert e is not None
    return e


def _with_elem(t: T.Type, e: T.Scalar) -> T.Type:
    return T.Matrix(e, t.rows, t.cols) if isinstance(t, T.Matrix) else T.with_elem(t, e)


def _shape(t: T.Type, left: bool) -> tuple[int, int]:
    """(rows, columns) of a mul operand: a vector is a row on the left and a column on the right."""
    if isinstance(t, T.Matrix):
        return t.rows, t.cols
    assert isinstance(t, T.Vector)
    return (1, t.n) if left else (t.n, 1)


def components_count(c: Checking, items: list[A.Expr], what: T.Type) -> int:
    """Scalar elements that `items` (numbers, vectors, matrices, nested `{...}`) supply, in order."""
    total = 0
    for it in items:
        if isinstance(it, A.InitList):
            total += components_count(c, it.items, what)
            continue
        t = c.expr(it)
        if isinstance(t, T.Matrix):
            total += t.rows * t.cols
        elif isinstance(t, T.Vector):
            total += t.n
        elif isinstance(t, T.Scalar):
            total += 1
        else:
            raise _err(TYPE_MISMATCH, f"{what} needs numbers, vectors or matrices for its elements, got {t}", it)
    return total


def check_ctor(c: Checking, e: A.Call, t: T.Matrix) -> T.Type:
    """`float2x2(1, 2, 3, 4)`, `float2x2(row0, row1)`, `float2x2(0.0)`, `float2x2(half2x2_value)`."""
    if len(e.args) == 1 and not isinstance(e.args[0], A.InitList):
        one = c.expr(e.args[0])
        if isinstance(one, T.Scalar) or isinstance(one, T.Matrix) and T.convertible(one, t):
            return t
        if isinstance(one, T.Matrix) and one.rows >= t.rows and one.cols >= t.cols:
            e.truncate = True  # type: ignore[attr-defined]  # HLSL: the upper-left R x C block
            return t
    total = components_count(c, e.args, t)
    if total != t.rows * t.cols:
        raise _err(ARG_COUNT, f"{t} constructor needs {t.rows * t.cols} elements, got {total}", e)
    return t


def check_init_list(c: Checking, e: A.InitList, t: T.Matrix) -> None:
    """`{1, 2, 3, 4}`, `{row0, row1}`, `{{1, 2}, {3, 4}}`: elements in row order, the rest zero."""
    e.ty = t
    total = components_count(c, e.items, t)
    if total > t.rows * t.cols:
        raise _err(ARG_COUNT, f"too many initializers for {t}: expected {t.rows * t.cols} elements, got {total}", e)


# ---- lowering ---------------------------------------------------------------------------------


class MatrixLowering:
    """Mixed into the lowerer (lower.py) next to ExprLowering and CallLowering."""

    def row_comps(self, row: SSAValue, t: T.Matrix) -> list[SSAValue]:
        if t.cols == 1:
            return [row]
        el = T.ir_scalar(t.elem)
        return [self.v(vector.ExtractOp(row, [k], el)) for k in range(t.cols)]

    def rows_of(self, comps: list[SSAValue], t: T.Matrix) -> list[SSAValue]:
        """The rows of t from its elements in row order."""
        rows = []
        for r in range(t.rows):
            part = comps[r * t.cols : (r + 1) * t.cols]
            rows += self.build_vector(part, t.row) if t.cols > 1 else part
        return rows

    def comps_of(self, vals: list[SSAValue], t: T.Type) -> list[SSAValue]:
        """The scalar elements of a scalar / vector / matrix value, in row order."""
        if isinstance(t, T.Matrix):
            return [x for row in vals for x in self.row_comps(row, t)]
        if isinstance(t, T.Vector):
            el = T.ir_scalar(t.elem)
            return [self.v(vector.ExtractOp(vals[0], [k], el)) for k in range(t.n)]
        return list(vals)

    def build_of(self, comps: list[SSAValue], t: T.Type) -> list[SSAValue]:
        if isinstance(t, T.Matrix):
            return self.rows_of(comps, t)
        if isinstance(t, T.Vector):
            return self.build_vector(comps, t)
        return comps

    def matrix_components(self, items: list[A.Expr], elem: T.Scalar) -> list[SSAValue]:
        out: list[SSAValue] = []
        for it in items:
            if isinstance(it, A.InitList):
                out += self.matrix_components(it.items, elem)
                continue
            t = it.ty
            if isinstance(t, T.Scalar):
                out += self.lower_as(it, elem)
            else:
                conv = _with_elem(t, elem)
                out += self.comps_of(self.convert(self.expr(it), t, conv), conv)
        return out

    def matrix_ctor(self, e: A.Call, t: T.Matrix) -> list[SSAValue]:
        if getattr(e, "truncate", False):
            src = e.args[0].ty
            rows = self.expr(e.args[0])[: t.rows]
            comps = [x for row in rows for x in self.row_comps(row, src)[: t.cols]]
            return self.rows_of([self.convert([x], T.Scalar(src.elem.kind), t.elem)[0] for x in comps], t)
        if len(e.args) == 1 and isinstance(e.args[0].ty, T.Scalar | T.Matrix) and not isinstance(e.args[0], A.InitList):
            return self.lower_as(e.args[0], t)
        return self.rows_of(self.matrix_components(e.args, t.elem), t)

    def matrix_init_list(self, e: A.InitList, t: T.Matrix) -> list[SSAValue]:
        comps = self.matrix_components(e.items, t.elem)
        comps += self.const(0, t.elem) * (t.rows * t.cols - len(comps))
        return self.rows_of(comps, t)

    def truncate(self, vals: list[SSAValue], src: T.Vector | T.Matrix, dst: T.Type) -> list[SSAValue]:
        """An explicit cast that drops trailing components (`truncates`): the kept ones, then
        converted to dst's element type."""
        if isinstance(src, T.Matrix):
            assert isinstance(dst, T.Matrix)
            kept = T.Matrix(src.elem, dst.rows, dst.cols)
            rows = [self.truncate([r], src.row, kept.row)[0] if src.cols != dst.cols else r
                    for r in vals[: dst.rows]]
            return self.convert(rows, kept, dst)
        n = dst.n if isinstance(dst, T.Vector) else 1
        (x,) = vals
        comps = [self.v(vector.ExtractOp(x, [i], T.ir_scalar(src.elem))) for i in range(n)]
        kept_t = T.Vector(src.elem, n) if n > 1 else src.elem
        kept = self.build_vector(comps, kept_t) if n > 1 else comps
        return self.convert(kept, kept_t, dst)

    def matrix_convert(self, vals: list[SSAValue], src: T.Type, dst: T.Matrix) -> list[SSAValue]:
        if isinstance(src, T.Matrix):
            return [self.convert([x], src.row, dst.row)[0] for x in vals]
        return self.convert(vals, src, dst.row) * dst.rows  # a scalar fills every element

    def matrix_rowwise(self, op: str, a: list[SSAValue], b: list[SSAValue], t: T.Matrix) -> list[SSAValue]:
        return [self.arith(op, [x], [y], t.row)[0] for x, y in zip(a, b)]

    def matrix_binary(self, e: A.Binary) -> list[SSAValue]:
        t = e.ty
        return self.matrix_rowwise(e.op, self.lower_as(e.lhs, t), self.lower_as(e.rhs, t), t)

    def matrix_negate(self, e: A.Unary) -> list[SSAValue]:
        rows = self.expr(e.operand)
        if e.op == "+":
            return rows
        if T.is_float_scalar(e.ty.elem):
            return [self.v(arith.NegfOp(x)) for x in rows]
        return self.matrix_rowwise("-", self.const(0, e.ty), rows, e.ty)

    def matrix_compound(self, e: A.Assign) -> list[SSAValue]:
        """`m op= x`: the elementwise op in the matrix's type, stored back."""
        t = e.target.ty
        new = self.matrix_rowwise(e.op[:-1], self.expr(e.target), self.lower_as(e.value, t), t)
        self.store(e.target, new)
        return new

    # ---- members ----
    def matrix_member(self, e: A.Member) -> list[SSAValue]:
        t = e.base.ty
        rows = self.expr(e.base)
        comps = [self.row_comps(rows[r], t)[col] for r, col in member_cells(e.name)]
        return comps if len(comps) == 1 else self.build_vector(comps, e.ty)

    def matrix_store_member(self, target: A.Member, vals: list[SSAValue]) -> None:
        t = target.base.ty
        rows = list(self.expr(target.base))
        cells = member_cells(target.name)
        comps = [vals[0]] if len(cells) == 1 else self.comps_of(vals, target.ty)
        for (r, col), x in zip(cells, comps):
            rows[r] = x if t.cols == 1 else self.v(vector.InsertOp(x, rows[r], [col]))
        self.store(target.base, rows)

    # ---- mul, transpose, determinant ----
    def matrix_call(self, e: A.Call) -> list[SSAValue]:
        name, types = e.target
        args = [self.lower_as(a, t) for a, t in zip(e.args, types)]
        if name == "transpose":
            (m,) = types
            comps = self.comps_of(args[0], m)
            return self.rows_of([comps[i * m.cols + j] for j in range(m.cols) for i in range(m.rows)], e.ty)
        if name == "determinant":
            (m,) = types
            comps = self.comps_of(args[0], m)
            grid = [comps[i * m.cols : (i + 1) * m.cols] for i in range(m.rows)]
            return [self.determinant(grid, m.elem)]
        if name == "scale":
            t = types[0]
            return [self.arith("*", [x], [y], t.row if isinstance(t, T.Matrix) else t)[0]
                    for x, y in zip(args[0], args[1])]
        a, b = types
        if isinstance(a, T.Vector) and isinstance(b, T.Vector):
            return [self.dot(args[0][0], args[1][0], a)]
        if isinstance(a, T.Matrix) and isinstance(b, T.Vector):  # M v: each row dotted with v
            comps = [self.dot(row, args[1][0], a.row) for row in args[0]]
            return self.build_of(comps, e.ty)
        # v M and A B: each result row is a sum of B's rows scaled by the left row's elements
        b_rows = args[1]
        left_rows = [args[0][0]] if isinstance(a, T.Vector) else args[0]
        left_row_type = a if isinstance(a, T.Vector) else a.row
        out = []
        for row in left_rows:
            scales = self.comps_of([row], left_row_type)
            acc = None
            for k, s in enumerate(scales):
                term = self.arith("*", self.convert([s], b.elem, b.row), [b_rows[k]], b.row)[0]
                acc = term if acc is None else self.arith("+", [acc], [term], b.row)[0]
            out.append(acc)
        return out

    def determinant(self, grid: list[list[SSAValue]], elem: T.Scalar) -> SSAValue:
        """Laplace expansion along the first row (n <= 4)."""
        n = len(grid)
        if n == 1:
            return grid[0][0]
        mul = lambda x, y: self.arith("*", [x], [y], elem)[0]  # noqa: E731
        if n == 2:
            return self.arith("-", [mul(grid[0][0], grid[1][1])], [mul(grid[0][1], grid[1][0])], elem)[0]
        acc = None
        for j in range(n):
            minor = [row[:j] + row[j + 1 :] for row in grid[1:]]
            term = mul(grid[0][j], self.determinant(minor, elem))
            if acc is None:
                acc = term
            else:
                acc = self.arith("-" if j % 2 else "+", [acc], [term], elem)[0]
        return acc


def truncates(src: T.Type, dst: T.Type) -> bool:
    """An explicit cast HLSL allows that drops trailing components: `(float3x3)m4x4` keeps the
    top-left 3x3, `(float2)v4` the first two (element types may convert too)."""
    if isinstance(src, T.Matrix) and isinstance(dst, T.Matrix):
        return (dst.rows, dst.cols) != (src.rows, src.cols) and dst.rows <= src.rows and dst.cols <= src.cols
    if isinstance(src, T.Vector) and isinstance(dst, T.Vector):
        return dst.n < src.n
    return False


def _check_unary(c: Checking, e: A.Unary, t: T.Type) -> T.Type | None:
    if not isinstance(t, T.Matrix):
        return None
    if e.op not in ("-", "+"):
        raise _err(TYPE_MISMATCH, f"operator '{e.op}' is not defined on matrices, got {t}", e.operand)
    return t


def _check_binary(c: Checking, e: A.Binary, a: T.Type, b: T.Type) -> T.Type | None:
    if isinstance(a, T.Pointer) or isinstance(b, T.Pointer):
        return None  # (pointer arithmetic's)
    if isinstance(a, T.Matrix) or isinstance(b, T.Matrix):
        return check_binary(e, a, b)
    return None


def _check_compound(c: Checking, e: A.Assign, t: T.Type) -> T.Type | None:
    if not isinstance(t, T.Matrix):
        return None
    v = c.expr(e.value)
    if not compound_ok(e.op, t, v):
        raise _err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {t} with {v}", e)
    return t


def _check_init_list(c: Checking, e: A.InitList, want: T.Type) -> bool | None:
    if not isinstance(want, T.Matrix):
        return None
    check_init_list(c, e, want)
    return True


def _check_call(c: Checking, e: A.Call, name: str) -> T.Type | None:
    if name not in MATRIX_FUNCS:
        return None
    from diffc.frontend.checker.calls import no_diff_meaningless

    no_diff_meaningless(c, e, name, True)
    return check_call(c, e, name)


FEATURE = Feature(
    "matrices", resolve_type=resolve, check_call=_check_call,
    check_constructor=lambda c, e, t: check_ctor(c, e, t) if isinstance(t, T.Matrix) else None, check_unary=_check_unary, check_binary=_check_binary, check_compound=_check_compound,
    check_init_list=_check_init_list,
    check_cast=lambda c, e, src, dst: True if truncates(src, dst) else None,
    check_member=lambda c, e, t: member(t, e.name, e.name_span) if isinstance(t, T.Matrix) else None,
)
