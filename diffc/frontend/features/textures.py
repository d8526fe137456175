"""Textures in compute programs: `Texture2D<T>`, `RWTexture2D<T>` and `SamplerState`.

A texture is three leaves (types.Texture): a memref of T's scalars holding the texels row by row
(texel (x, y) at scalar (y * width + x) * C, C the vector width of T, its components
consecutive), then its width and height as i32. A parameter's leaves carry the kernel ABI roles
`texels`, `width`, `height` (dialects/abi.py); a global texture is two buffers, its texels and
`<name>__dims` (a memref<2xi32>: width, height), so that dispatch binds both from one array.

Reads: `tex[uint2(x, y)]` and `tex.Load(int3(x, y, mip))` return 0 outside the texture (as D3D
defines an out-of-range Load) and for a mip other than 0 (a texture here has one level; a
constant other mip is refused); writes `rwtex[uint2(x, y)] = v` outside it are dropped.
`GetDimensions(out w, out h)` gives the size. `SampleLevel(s, uv, lod)` and `Sample(s, uv)`
filter bilinearly with clamp-to-edge addressing, texel centres at (i + 0.5) / size: the one
sampler modelled, whatever the SamplerState says. A texture has one mip level, so a lod that is
not a constant samples it (D3D clamps the level to the levels there are); a constant lod other
than 0 is refused.

Derivatives: texels are memory, constants to fwd_diff / bwd_diff like buffer elements. The
filter's weights are arithmetic on uv, so a sample's derivative with respect to uv is the
bilinear interpolant's (it exists away from texel centres' grid lines, where it jumps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, math, memref, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, StringAttr, UnitAttr, i32
from xdsl.ir import Block, Region, SSAValue

from diffc.dialects.abi import ABI, AbiRoleAttr
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH, UNKNOWN_MEMBER, UNSUPPORTED
from diffc.frontend.checker.symbols import err

from diffc.frontend.feature import Feature
if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

TEXTURES = {"Texture2D": False, "RWTexture2D": True}  # name -> writable
ELEMENTS = ("float", "int", "uint")  # scalars and vectors of these
METHODS = {"Load", "SampleLevel", "Sample", "GetDimensions"}
DIMS = "__dims"  # a global texture `t`'s size buffer is `t__dims`


def resolve(c, t: A.TypeRef) -> T.Type:
    """`Texture2D<T>`, `RWTexture2D<T>` (T defaults to float4), `SamplerState`."""
    if t.name == "SamplerState":
        return T.Sampler()
    if len(t.args) > 1 or t.args and not isinstance(t.args[0], A.TypeRef):
        raise err(TYPE_MISMATCH, f"{t.name} takes one type argument, the texel type", t)
    elem = c.resolve(t.args[0]) if t.args else T.Vector(T.FLOAT, 4)
    e = T.elem_of(elem)
    if e is None or e.kind not in ELEMENTS:
        raise err(UNSUPPORTED, f"{t.name}<{elem}> is not supported (texels are float, int or uint scalars or "
                  "vectors)", t)
    return T.Texture(elem, TEXTURES[t.name])


def _width(t: T.Type) -> int:
    return t.n if isinstance(t, T.Vector) else 1


def _coords(c: Checking, e: A.Expr, n: int, what: str) -> None:
    """An int or uint vector of n; an integer scalar is every component (HLSL's promotion)."""
    got = c.expr(e)
    if not (isinstance(got, T.Vector) and got.n == n and T.is_int_scalar(got.elem) or T.is_int_scalar(got)):
        raise err(TYPE_MISMATCH, f"{what} needs an int{n} or uint{n}, got {got}", e)


def check_index(c: Checking, e: A.Index, t: T.Texture) -> T.Type:
    """`tex[uint2(x, y)]`: a texel."""
    if e.more:
        raise err(TYPE_MISMATCH, f"a {t} takes one index, a uint2", e.more[0])
    _coords(c, e.index, 2, f"indexing a {t}")
    return t.elem


def holds_texture(t: T.Type) -> bool:
    if isinstance(t, T.Array):
        return holds_texture(t.elem)
    return isinstance(t, T.Texture) or isinstance(t, T.Struct) and any(holds_texture(ft) for _, ft, _ in t.fields)


def check_signature(params, ret: T.Type, d: A.Func) -> None:
    """Textures go into functions only: a kernel cannot hand a buffer back (nor can OpenCL C)."""
    if holds_texture(ret):
        raise err(UNSUPPORTED, f"a function returning {ret} is not supported (textures are passed in, not "
                  "returned)", d.ret)
    this = next((p for p in params if p.name == "this"), None)
    if this is not None and this.direction == "inout" and holds_texture(this.ty):
        raise err(UNSUPPORTED, f"a [mutating] method of {this.ty}, which holds a texture, is not supported "
                  "(textures are passed in, not returned)", d)
    for p, ap in zip([p for p in params if p is not this], d.params):
        if p.direction != "in" and holds_texture(p.ty):
            raise err(UNSUPPORTED, f"an '{p.direction}' parameter of type {p.ty} is not supported (textures are "
                      "passed in, not returned)", ap.type)


def check_array_index(e: A.Index, t: T.Type) -> None:
    """An array of textures takes literal indices: choosing among buffers at run time would select
    between memrefs, which the OpenCL C emitted here cannot hold in a variable."""
    if isinstance(t, T.Array) and holds_texture(t.elem) and not isinstance(e.index, A.Num):
        raise err(UNSUPPORTED, f"indexing an array of {t.elem} at a run-time index is not supported (write "
                  "each element's use with a literal index)", e.index)


def check_write(e: A.Expr, t: T.Texture) -> None:
    if not t.rw:
        raise err(TYPE_MISMATCH, f"cannot write to a {t}: it is read-only (RWTexture2D is writable)", e)


def _nonzero_constant(e: A.Expr) -> bool:
    """A literal other than 0 (`2`, `-1.0`)."""
    if isinstance(e, A.Unary) and e.op == "-":
        e = e.operand
    return isinstance(e, A.Num) and e.value != 0


def check_method(c: Checking, e: A.Call, callee: A.Member, t: T.Texture) -> T.Type:
    name = callee.name
    if name not in METHODS:
        raise err(UNSUPPORTED if name in ("Gather", "SampleGrad", "SampleBias", "SampleCmp", "SampleCmpLevelZero",
                                          "GatherRed", "CalculateLevelOfDetail") else UNKNOWN_MEMBER,
                  f"{t}'s method '{name}' is not supported (supported: {', '.join(sorted(METHODS))})",
                  callee.name_span)
    want = {"Load": 1, "SampleLevel": 3, "Sample": 2, "GetDimensions": 2}[name]
    if name == "Load" and not t.rw and len(e.args) == 2:  # `Load(location, offset)`: a texel offset
        c.expect_type(e.args[1], T.Vector(T.INT, 2))
        want = 2
    if name == "GetDimensions" and not t.rw and len(e.args) == 4:  # (mip, out w, out h, out levels)
        c.expect_type(e.args[0], T.UINT)
        want = 4
    if len(e.args) != want:
        if name != "GetDimensions" and len(e.args) > want:  # a texel offset, a clamp, a status
            more = max(want, 2) if name == "Load" and not t.rw else want  # (Load's offset: supported)
            raise err(UNSUPPORTED, f"{name} with more than {more} argument{'s' if more > 1 else ''} (a texel "
                      "offset, a clamp or a status) is not supported", e.args[more])
        raise err(ARG_COUNT, f"{name} takes {want} argument{'s' if want > 1 else ''}, got {len(e.args)}", e)
    e.kind, e.target = "texture", (name, t)
    if name == "GetDimensions":
        for a in e.args[-3:] if want == 4 else e.args:
            got = c.lvalue(a)
            if not (isinstance(got, T.Scalar) and (T.is_int_scalar(got) or T.is_float_scalar(got))):
                raise err(TYPE_MISMATCH, f"GetDimensions writes a number, got a variable of type {got}", a)
        return T.VOID
    if name == "Load" and t.rw:  # an RWTexture2D has no levels: Load(int2)
        _coords(c, e.args[0], 2, f"Load of a {t}")
        return t.elem
    if name == "Load":
        _coords(c, e.args[0], 3, "Load")
        mip = e.args[0]
        if isinstance(mip, A.Call) and mip.kind == "ctor" and len(mip.args) == 3 and _nonzero_constant(mip.args[2]):
            raise err(UNSUPPORTED, "Load from a mip level other than 0 is not supported (a texture has one level)",
                      mip.args[2])
        return t.elem
    st = c.expr(e.args[0])
    if not isinstance(st, T.Sampler):
        raise err(TYPE_MISMATCH, f"{name} needs a SamplerState first, got {st}", e.args[0])
    if not T.is_float_scalar(T.elem_of(t.elem)):
        raise err(TYPE_MISMATCH, f"{name} filters float texels; {t} holds {t.elem} (read it with Load)", callee.name_span)
    c.expect_type(e.args[1], T.Vector(T.FLOAT, 2))
    if name == "SampleLevel":
        c.expect_type(e.args[2], T.FLOAT)
        if _nonzero_constant(e.args[2]):
            raise err(UNSUPPORTED, "SampleLevel at a level of detail other than 0 is not supported (a texture has "
                      "one mip level)", e.args[2])
    return t.elem


# ---- IR ----

def resource_global(t: T.Type) -> bool:
    """A global that is textures: a texture, or a struct (a `ParameterBlock<S>`'s S) of textures,
    samplers and such structs, whose leaves are then its textures'."""
    if isinstance(t, T.Texture):
        return True
    return isinstance(t, T.Struct) and bool(t.fields) and all(
        isinstance(ft, T.Sampler) or resource_global(ft) for _, ft, _ in t.fields)


def _textures_of(t: T.Type, name: str) -> list[tuple[str, T.Texture]]:
    if isinstance(t, T.Texture):
        return [(name, t)]
    if isinstance(t, T.Struct):
        return [x for fname, ft, _ in t.fields for x in _textures_of(ft, f"{name}_{fname}")]
    return []


def global_ops(name: str, t: T.Type) -> list:
    """The buffers of each texture of global `name` (field f of a struct: `name_f`): its texels
    and its size."""
    return [op for path, tt in _textures_of(t, name) for op in _texture_ops(path, tt)]


def _texture_ops(name: str, t: T.Texture) -> list:
    texels = memref.GlobalOp.get(StringAttr(name), T.leaf_types(t)[0], UnitAttr(), StringAttr("public"))
    texels.attributes[ABI] = AbiRoleAttr("texels", name, _width(t.elem))
    dims = memref.GlobalOp.get(StringAttr(name + DIMS), MemRefType(i32, [2]), UnitAttr(), StringAttr("public"))
    dims.attributes[ABI] = AbiRoleAttr("dims", name, _width(t.elem))
    return [texels, dims]


def read_global(lw, name: str, t: T.Type) -> list[SSAValue]:
    return [x for path, tt in _textures_of(t, name) for x in _read_texture(lw, path, tt)]


def _read_texture(lw, name: str, t: T.Texture) -> list[SSAValue]:
    texels = lw.v(memref.GetGlobalOp(name, T.leaf_types(t)[0]))
    dims = lw.v(memref.GetGlobalOp(name + DIMS, MemRefType(i32, [2])))
    return [texels] + [lw.v(memref.LoadOp.get(dims, [lw.index_const(k)])) for k in (0, 1)]


def _i32(lw, k: int) -> SSAValue:
    return lw.v(arith.ConstantOp(IntegerAttr(k, i32)))


def _f32(lw, x: float) -> SSAValue:
    return lw.const(x, T.FLOAT)[0]


def _xy(lw, e: A.Expr, n: int = 2) -> list[SSAValue]:
    """The n components of an int2 / int3 / uint2 ... coordinate (or of a scalar one), as i32."""
    (v,) = lw.lower_as(e, T.Vector(T.INT, n))
    return [lw.v(vector.ExtractOp(v, [k], i32)) for k in range(n)]


def _texel(lw, t: T.Texture, texels: SSAValue, width: SSAValue, x: SSAValue, y: SSAValue) -> list[SSAValue]:
    """The texel at (x, y), which must be inside."""
    n = _width(t.elem)
    at = lw.v(arith.MuliOp(lw.v(arith.AddiOp(lw.v(arith.MuliOp(y, width)), x)), _i32(lw, n)))
    at = lw.v(arith.IndexCastOp(at, IndexType()))
    comps = [lw.v(memref.LoadOp.get(texels, [lw.offset_by(at, k) if k else at])) for k in range(n)]
    return lw.build_vector(comps, t.elem) if n > 1 else comps


def _inside(lw, x, y, width, height) -> SSAValue:
    """0 <= x < width and 0 <= y < height (unsigned compares: a negative coordinate is huge)."""
    return lw.v(arith.AndIOp(lw.v(arith.CmpiOp(x, width, "ult")), lw.v(arith.CmpiOp(y, height, "ult"))))


def _guarded(lw, cond: SSAValue, inside, outside) -> list[SSAValue]:
    """`cond ? inside() : outside()`, each side run only when taken (a read outside is no read)."""
    blocks = []
    saved = lw.block
    for side in (inside, outside):
        blk = Block()
        lw.block = blk
        vals = side()
        blk.add_op(scf.YieldOp(*vals))
        blocks.append(blk)
    lw.block = saved
    types = [x.type for x in blocks[0].last_op.operands]
    return list(lw.emit(scf.IfOp(cond, types, Region(blocks[0]), Region(blocks[1]))).results)


def lower_index(lw, e: A.Index) -> list[SSAValue]:
    t = e.base.ty
    texels, width, height = lw.expr(e.base)
    x, y = _xy(lw, e.index)
    return _guarded(lw, _inside(lw, x, y, width, height), lambda: _texel(lw, t, texels, width, x, y),
                    lambda: lw.const(0, t.elem))


def lower_write(lw, target: A.Index, vals: list[SSAValue]) -> None:
    t = target.base.ty
    texels, width, height = lw.expr(target.base)
    x, y = _xy(lw, target.index)
    n = _width(t.elem)
    el = T.ir_scalar(T.elem_of(t.elem))

    def write() -> list[SSAValue]:
        at = lw.v(arith.MuliOp(lw.v(arith.AddiOp(lw.v(arith.MuliOp(y, width)), x)), _i32(lw, n)))
        at = lw.v(arith.IndexCastOp(at, IndexType()))
        for k in range(n):
            comp = lw.v(vector.ExtractOp(vals[0], [k], el)) if n > 1 else vals[0]
            lw.emit(memref.StoreOp.get(comp, texels, [lw.offset_by(at, k) if k else at]))
        return []

    _guarded(lw, _inside(lw, x, y, width, height), write, lambda: [])


def lower_call(lw, e: A.Call) -> list[SSAValue]:
    name, t = e.target
    texels, width, height = lw.expr(e.callee.base)
    if name == "GetDimensions" and len(e.args) == 4:  # level `mip` of one: max(1, size >> mip), 1 level
        (mip,) = lw.lower_as(e.args[0], T.UINT)
        one = _i32(lw, 1)
        for a, v in zip(e.args[1:3], (width, height)):
            lw.store(a, lw.convert([lw.v(arith.MaxUIOp(lw.v(arith.ShRUIOp(v, mip)), one))], T.UINT, a.ty))
        lw.store(e.args[3], lw.convert([one], T.UINT, e.args[3].ty))
        return []
    if name == "GetDimensions":
        for a, v in zip(e.args, (width, height)):
            lw.store(a, lw.convert([v], T.UINT, a.ty))
        return []
    if name == "Load":
        x, y, *mip = _xy(lw, e.args[0], 2 if t.rw else 3)
        if len(e.args) == 2:  # the texel offset moves the location (outside: 0, as any Load)
            dx, dy = _xy(lw, e.args[1], 2)
            x, y = lw.v(arith.AddiOp(x, dx)), lw.v(arith.AddiOp(y, dy))
        ok = _inside(lw, x, y, width, height)
        if mip:
            ok = lw.v(arith.AndIOp(ok, lw.v(arith.CmpiOp(mip[0], _i32(lw, 0), "eq"))))
        return _guarded(lw, ok, lambda: _texel(lw, t, texels, width, x, y), lambda: lw.const(0, t.elem))
    (uv,) = lw.lower_as(e.args[1], T.Vector(T.FLOAT, 2))
    if name == "SampleLevel":
        lw.lower_as(e.args[2], T.FLOAT)  # (evaluated for its effects; one level to sample)
    return _bilinear(lw, t, texels, width, height, uv)


def _bilinear(lw, t: T.Texture, texels, width, height, uv) -> list[SSAValue]:
    """The four texels around uv, weighted by uv's place among their centres; coordinates
    clamped to the edge texels (clamp-to-edge)."""
    f32 = T.ir_scalar(T.FLOAT)
    corners, weights = [], []
    for axis, size in enumerate((width, height)):
        sf = lw.v(arith.SIToFPOp(size, f32))
        p = lw.v(arith.SubfOp(lw.v(arith.MulfOp(lw.v(vector.ExtractOp(uv, [axis], f32)), sf)), _f32(lw, 0.5)))
        # within [-1, size], which changes no sample, so the integer conversion below is defined
        # (fmin and fmax also turn a NaN into an edge)
        p = lw.v(arith.MaximumfOp(lw.v(arith.MinimumfOp(p, sf)), _f32(lw, -1.0)))
        lo = lw.v(math.FloorOp(p))
        weights.append(lw.v(arith.SubfOp(p, lo)))
        i0 = lw.v(arith.FPToSIOp(lo, i32))
        last = lw.v(arith.SubiOp(size, _i32(lw, 1)))
        clamp = lambda i: lw.v(arith.MaxSIOp(lw.v(arith.MinSIOp(i, last)), _i32(lw, 0)))  # noqa: E731
        corners.append((clamp(i0), clamp(lw.v(arith.AddiOp(i0, _i32(lw, 1))))))
    (x0, x1), (y0, y1) = corners
    fx, fy = weights
    if isinstance(t.elem, T.Vector):
        vt = T.leaf_types(t.elem)[0]
        fx, fy = lw.v(vector.BroadcastOp(fx, vt)), lw.v(vector.BroadcastOp(fy, vt))

    def lerp(a, b, f):
        return lw.v(arith.AddfOp(a, lw.v(arith.MulfOp(lw.v(arith.SubfOp(b, a)), f))))

    (t00,), (t10,) = _texel(lw, t, texels, width, x0, y0), _texel(lw, t, texels, width, x1, y0)
    (t01,), (t11,) = _texel(lw, t, texels, width, x0, y1), _texel(lw, t, texels, width, x1, y1)
    return [lerp(lerp(t00, t10, fx), lerp(t01, t11, fx), fy)]


def _check_index(c: Checking, e: A.Index, t: T.Type) -> T.Type | None:
    if isinstance(t, T.Texture):
        return check_index(c, e, t)
    if isinstance(t, T.Array | T.Buffer):
        check_array_index(e, t)
    return None


def _check_write(c: Checking, e: A.Expr, base: A.Expr, t: T.Type) -> bool | None:
    if isinstance(t, T.Texture) and isinstance(base, A.Index):
        check_write(e, t)
        return True  # a texel: memory too
    return None


def _resolve(c: Checking, name: str, t: A.TypeRef) -> T.Type | None:
    return resolve(c, t) if name in TEXTURES or name == "SamplerState" else None


FEATURE = Feature("textures", resolve_type=_resolve, check_index=_check_index,
                  check_method=lambda c, e, callee, t: check_method(c, e, callee, t) if isinstance(t, T.Texture) else None, check_write=_check_write,
                  check_signature=lambda c, params, ret, d: check_signature(params, ret, d))
