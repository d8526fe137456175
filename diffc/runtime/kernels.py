"""The IR of the element-wise kernels that `m.f(...)`, `m.f.fwds(...)` and `m.f.bwds(...)` run.

A kernel is a `func.func` with `kernel.entry` that, for each output element `e`, loads the
arguments, calls the scalar function (`func.call @f`, `diff.fwd_diff @f` or `diff.bwd_diff @f`)
and stores or accumulates the results. Its parameters, in this order:

    for each tensor argument: its buffer (memref<?xT>), then its grad buffer when the mode uses it
    for each scalar argument: its value
    the output buffer (and, for fwds, the output tangent buffer; for bwds, the output grad buffer)
    n: index                      number of output elements
    for a broadcast call (some argument has kind "b"):
        the output shape (rank values), then for each "b" argument its strides (rank values,
        0 along broadcast dimensions)

Argument kinds: "s" a scalar kernel argument, "f" a tensor of the output's shape (element `e`),
"b" a tensor broadcast to the output's shape (element from strides).

Two forms: scalar (one element per work-item, `if e < n`) and vector (no "b" arguments: four
elements per work-item with kernel.vload/vstore, then a scalar tail loop in the last work-item).

A bwds kernel whose broadcast arguments take gradients (`KernelSpec.group` > 0) reduces them
instead of adding each element's contribution atomically: each work-item walks its elements,
summing in a register while the target index stays the same (an atomic add flushes the sum when
it changes), then the work-group combines its work-items' sums in local memory (a tree: equal
targets merge, different ones are flushed atomically), and one atomic add per target and
work-group remains. The walk is `e = global_id, global_id + global_size, ...` on GPUs (coalesced;
with a global size that is a multiple of the broadcast's period, see `broadcast_period`, every
element of a work-item has the same target), or a contiguous block of elements per work-item
(`KernelSpec.blocked`: CPU runtimes such as PoCL run a group's work-items one after another, and
a strided walk would touch a new cache line at every element).
"""

from __future__ import annotations

import math

from typing import NamedTuple

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import (
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from diffc.dialects import diff
from diffc.dialects.kernel import (
    AtomicAddOp,
    BarrierOp,
    GlobalIdOp,
    GlobalSizeOp,
    LocalAllocOp,
    LocalIdOp,
    VLoadOp,
    VStoreOp,
    local_memref,
    mark_kernel,
)

VECTOR_WIDTH = 4
INDEX = IndexType()


# NamedTuples, not dataclasses: a call hashes and compares its spec to find its kernel, and a
# tuple's hash and equality run in C (the dataclasses' cost about 10 us of a tiny call)
class ArgSpec(NamedTuple):
    """How one parameter of the scalar function is fed."""

    kind: str  # "s" | "f" | "b"
    grad: bool = False  # fwds: a tangent buffer; bwds: a grad buffer to accumulate into


class KernelSpec(NamedTuple):
    function: str
    mode: str  # "call" | "fwds" | "bwds"
    args: tuple[ArgSpec, ...]
    rank: int  # the output rank when some argument is "b", else 0
    vectorized: bool
    group: int = 0  # bwds with broadcast gradients: the work-group size of the reduce form
    blocked: bool = False  # the reduce form's work-items walk contiguous blocks (CPUs), not strides

    @property
    def reduces(self) -> bool:
        return self.group > 0 and any(a.kind == "b" and a.grad for a in self.args)

    @property
    def kernel_name(self) -> str:
        return f"diffc_{self.mode}_{self.function}"


class _Emitter:
    """Appends ops to a block and hands back their results."""

    def __init__(self, block: Block):
        self.block = block

    def op(self, op):
        self.block.add_op(op)
        return op.results[0] if len(op.results) == 1 else op

    def index(self, v: int) -> SSAValue:
        return self.op(arith.ConstantOp.from_int_and_width(v, INDEX))

    def zero(self, t: Attribute) -> SSAValue:
        if diff.is_float_type(t):
            return self.op(arith.ConstantOp(FloatAttr(0.0, t)))
        return self.op(arith.ConstantOp(IntegerAttr(0, t)))


def _memref(t: Attribute) -> MemRefType:
    return MemRefType(t, [-1])


def kernel_layout(spec: KernelSpec) -> list[tuple]:
    """The element-wise kernel's parameters, in order, as keys the builder and the launch
    (runtime/module.py) both read: ("buf", i) and ("grad", i) the buffers of tensor argument i
    (its gradient or tangent with `grad`), ("val", i) scalar argument i, ("out",) and
    ("out_grad",) the result's, ("n",) the element count, ("shape", d) the output's extent d and
    ("stride", i, d) broadcast argument i's stride in it (with broadcasting only). A launch
    appends the status buffers of checked kernels after them."""
    keys: list[tuple] = []
    for i, a in enumerate(spec.args):
        if a.kind != "s":
            keys.append(("buf", i))
            if a.grad:
                keys.append(("grad", i))
    keys += [("val", i) for i, a in enumerate(spec.args) if a.kind == "s"]
    keys.append(("out",))
    if spec.mode in ("fwds", "bwds"):
        keys.append(("out_grad",))
    keys.append(("n",))
    bcast = [i for i, a in enumerate(spec.args) if a.kind == "b"]
    if bcast:
        keys += [("shape", d) for d in range(spec.rank)]
        keys += [("stride", i, d) for i in bcast for d in range(spec.rank)]
    return keys


def build_kernel(
    module: ModuleOp, f: func.FuncOp, spec: KernelSpec, names: list[str] | None = None
) -> func.FuncOp:
    """Adds the kernel for `spec` to `module` (which holds `f`) and returns it. `names` are
    the parameter names of `f` (for readable OpenCL C)."""
    ptypes = list(f.function_type.inputs.data)
    rtype = f.function_type.outputs.data[0]
    diffable = [diff.arg_is_differentiable(f, i) for i in range(len(ptypes))]

    # -- the kernel's parameters, in the order kernel_layout gives (the launch reads it too) ---
    def param_type(key: tuple) -> Attribute:
        if key[0] in ("buf", "grad"):
            return _memref(ptypes[key[1]])
        if key[0] == "val":
            return ptypes[key[1]]
        if key[0] in ("out", "out_grad"):
            return _memref(rtype)
        return INDEX  # n, shape, stride

    layout = kernel_layout(spec)
    slots: dict[tuple, int] = {key: k for k, key in enumerate(layout)}
    params: list[Attribute] = [param_type(key) for key in layout]
    bcast = [i for i, a in enumerate(spec.args) if a.kind == "b"]

    block = Block(arg_types=params)
    kernel = func.FuncOp(spec.kernel_name, FunctionType.from_lists(params, []), Region(block))
    mark_kernel(kernel)
    arg = {key: block.args[k] for key, k in slots.items()}
    pnames = names or [f"arg{i}" for i in range(len(ptypes))]
    for key, k in slots.items():
        if key[0] in ("buf", "val"):
            hint = pnames[key[1]]
        elif key[0] == "grad":
            hint = f"{pnames[key[1]]}_grad"
        elif key[0] == "shape":
            hint = f"shape{key[1]}"
        elif key[0] == "stride":
            hint = f"{pnames[key[1]]}_stride{key[2]}"
        else:
            hint = key[0]
        block.args[k].name_hint = hint
    b = _Emitter(block)

    def element(eb: _Emitter, e: SSAValue, lanes: dict | None = None, lane: int = 0):
        """Loads every argument for element e; with `lanes`, takes f-arguments from vectors."""
        idx: dict[int, SSAValue] = {}
        if bcast:
            rem = e
            coords: list[SSAValue] = [e] * spec.rank
            for d in reversed(range(1, spec.rank)):
                size = arg[("shape", d)]
                coords[d] = eb.op(arith.RemUIOp(rem, size))
                rem = eb.op(arith.DivUIOp(rem, size))
            if spec.rank:
                coords[0] = rem  # e < n: what is left is already below shape[0] (no division)
            for i in bcast:
                acc = None
                for d in range(spec.rank):
                    term = eb.op(arith.MuliOp(coords[d], arg[("stride", i, d)]))
                    acc = term if acc is None else eb.op(arith.AddiOp(acc, term))
                idx[i] = acc if acc is not None else eb.index(0)
        values, tangents = [], []
        for i, a in enumerate(spec.args):
            if a.kind == "s":
                values.append(arg[("val", i)])
                tangents.append(None)
                continue
            where = idx.get(i, e)
            if lanes is not None:
                values.append(eb.op(vector.ExtractOp(lanes[("buf", i)], [lane], ptypes[i])))
            else:
                values.append(eb.op(memref.LoadOp.get(arg[("buf", i)], [where])))
            if spec.mode == "fwds" and a.grad:
                if lanes is not None:
                    tangents.append(eb.op(vector.ExtractOp(lanes[("grad", i)], [lane], ptypes[i])))
                else:
                    tangents.append(eb.op(memref.LoadOp.get(arg[("grad", i)], [where])))
            else:
                tangents.append(None)
        return idx, values, tangents

    def compute(eb: _Emitter, e: SSAValue, values, tangents, dout: SSAValue | None):
        """The per-element call; returns what to store: [(key, value)] and bwds grads."""
        if spec.mode == "call":
            r = eb.op(func.CallOp(f.sym_name.data, values, [rtype]))
            return [r], []
        if spec.mode == "fwds":
            sig = diff.fwd_signature(f)
            ins = []
            for i, v in enumerate(values):
                if diffable[i]:
                    t = tangents[i] if tangents[i] is not None else eb.zero(ptypes[i])
                    ins.append(eb.op(diff.MakePairOp(v, t)))
                else:
                    ins.append(v)
            pair = eb.op(diff.FwdDiffOp(f.sym_name.data, ins, list(sig.outputs.data)))
            if isinstance(pair.type, diff.PairType):
                return [eb.op(diff.PrimalOp(pair)), eb.op(diff.DifferentialOp(pair))], []
            return [pair, eb.zero(rtype)], []
        sig = diff.bwd_signature(f)
        op = diff.BwdDiffOp(f.sym_name.data, [*values, dout], list(sig.outputs.data))
        eb.block.add_op(op)
        grads: dict[int, SSAValue] = {}
        k = 0
        for i in range(len(values)):
            if diffable[i]:
                grads[i] = op.results[k]
                k += 1
        return [], grads

    def scalar_body(eb: _Emitter, e: SSAValue, broadcast_grad=None) -> None:
        """One element; `broadcast_grad(i, index, g)` takes a "b" argument's gradient (default:
        an atomic add into its grad buffer)."""
        idx, values, tangents = element(eb, e)
        dout = eb.op(memref.LoadOp.get(arg[("out_grad",)], [e])) if spec.mode == "bwds" else None
        outs, grads = compute(eb, e, values, tangents, dout)
        if spec.mode == "call":
            eb.op(memref.StoreOp.get(outs[0], arg[("out",)], [e]))
        elif spec.mode == "fwds":
            eb.op(memref.StoreOp.get(outs[0], arg[("out",)], [e]))
            eb.op(memref.StoreOp.get(outs[1], arg[("out_grad",)], [e]))
        else:
            for i, g in grads.items():
                a = spec.args[i]
                if not a.grad or a.kind == "s":
                    continue
                if a.kind == "b":
                    if broadcast_grad is not None:
                        broadcast_grad(i, idx[i], g)
                    else:
                        eb.op(AtomicAddOp(g, arg[("grad", i)], [idx[i]]))
                else:
                    old = eb.op(memref.LoadOp.get(arg[("grad", i)], [e]))
                    eb.op(memref.StoreOp.get(eb.op(arith.AddfOp(old, g)), arg[("grad", i)], [e]))

    if spec.mode == "bwds" and spec.reduces:
        _reduce_form(b, spec, arg, ptypes, scalar_body)
        mark_kernel(kernel, [spec.group, 1, 1])
        module.body.block.add_op(kernel)
        return kernel

    gid = b.op(GlobalIdOp(0))
    n = arg[("n",)]
    if not spec.vectorized:
        inside = b.op(arith.CmpiOp(gid, n, "ult"))
        then = Block()
        scalar_body(_Emitter(then), gid)
        then.add_op(scf.YieldOp())
        b.op(scf.IfOp(inside, [], Region(then)))
        b.op(func.ReturnOp())
        module.body.block.add_op(kernel)
        return kernel

    # Vector form: work-item g handles elements 4g .. 4g+3 when all exist, else the tail.
    w = VECTOR_WIDTH
    four = b.index(w)
    first = b.op(arith.MuliOp(gid, four))
    end = b.op(arith.AddiOp(first, four))
    full = b.op(arith.CmpiOp(end, n, "ule"))

    vec_block = Block()
    vb = _Emitter(vec_block)
    lanes: dict[tuple, SSAValue] = {}
    for i, a in enumerate(spec.args):
        if a.kind == "s":
            continue
        vt = VectorType(ptypes[i], [w])
        lanes[("buf", i)] = vb.op(VLoadOp(arg[("buf", i)], gid, vt))
        if a.grad and spec.mode == "fwds":
            lanes[("grad", i)] = vb.op(VLoadOp(arg[("grad", i)], gid, vt))
    douts = None
    if spec.mode == "bwds":
        douts = vb.op(VLoadOp(arg[("out_grad",)], gid, VectorType(rtype, [w])))
    per_lane_outs: list[list[SSAValue]] = []
    per_lane_grads: list[dict[int, SSAValue]] = []
    for lane in range(w):
        e = first  # unused by f-arguments in lane form
        _, values, tangents = element(vb, e, lanes, lane)
        dout = vb.op(vector.ExtractOp(douts, [lane], rtype)) if douts is not None else None
        outs, grads = compute(vb, e, values, tangents, dout)
        per_lane_outs.append(outs)
        per_lane_grads.append(grads)

    def assemble(parts: list[SSAValue], t: Attribute) -> SSAValue:
        v = vb.op(vector.BroadcastOp(parts[0], VectorType(t, [w])))
        for lane in range(1, w):
            v = vb.op(vector.InsertOp(parts[lane], v, [lane]))
        return v

    if spec.mode in ("call", "fwds"):
        vb.op(VStoreOp(assemble([o[0] for o in per_lane_outs], rtype), arg[("out",)], gid))
        if spec.mode == "fwds":
            vb.op(VStoreOp(assemble([o[1] for o in per_lane_outs], rtype), arg[("out_grad",)], gid))
    else:
        for i, a in enumerate(spec.args):
            if a.kind == "s" or not a.grad or i not in per_lane_grads[0]:
                continue
            # Add lane by lane, then assemble: assembling the gradients into a vector first and
            # adding vectors made PoCL's work-group vectorizer emit code twice as slow.
            old = vb.op(VLoadOp(arg[("grad", i)], gid, VectorType(ptypes[i], [w])))
            sums = [
                vb.op(arith.AddfOp(vb.op(vector.ExtractOp(old, [lane], ptypes[i])), pg[i]))
                for lane, pg in enumerate(per_lane_grads)
            ]
            vb.op(VStoreOp(assemble(sums, ptypes[i]), arg[("grad", i)], gid))
    vec_block.add_op(scf.YieldOp())

    tail_block = Block()
    tb = _Emitter(tail_block)
    one = tb.index(1)
    lo = tb.op(arith.MinUIOp(first, n))
    loop_body = Block(arg_types=[INDEX])
    scalar_body(_Emitter(loop_body), loop_body.args[0])
    loop_body.add_op(scf.YieldOp())
    tb.op(scf.ForOp(lo, n, one, [], Region(loop_body)))
    tail_block.add_op(scf.YieldOp())

    b.op(scf.IfOp(full, [], Region(vec_block), Region(tail_block)))
    b.op(func.ReturnOp())
    module.body.block.add_op(kernel)
    return kernel


def broadcast_period(shape: tuple[int, ...], strides: list[int]) -> int:
    """The smallest P with index(e + P) == index(e) for every element e of the output `shape`
    when the "b" argument's element index comes from `strides` (0 along broadcast dimensions):
    the product of the dimensions from the first one with a non-zero stride on."""
    first = next((d for d, st in enumerate(strides) if st != 0), len(shape))
    p = 1
    for d in shape[first:]:
        p *= d
    return p


# Work-groups per compute unit for the reduce form: enough to fill the device, few enough
# that each work-item sums many elements.
REDUCE_GROUPS_PER_UNIT = 8


def reduce_groups(size: int, wg: int, period: int, compute_units: int) -> int:
    """How many work-groups the reduce form runs: one element per work-item when that is few
    enough groups, else a number whose global size is a multiple of `period`, so that each
    work-item's elements share their broadcast targets."""
    every = -(-size // wg)  # one element per work-item
    target = max(1, compute_units * REDUCE_GROUPS_PER_UNIT)
    if every <= target:
        return every
    unit = period // math.gcd(period, wg)  # groups per global size that is a multiple of period
    if unit >= every:
        return every
    return max(unit, target // unit * unit)



def _reduce_form(b: _Emitter, spec: KernelSpec, arg: dict, ptypes: list, scalar_body) -> None:
    """The bwds kernel body that reduces broadcast gradients (see the module docstring)."""
    wg = spec.group
    if wg & (wg - 1):
        raise ValueError(f"the reduce form needs a power-of-two work-group size, got {wg}")
    reduced = [i for i, a in enumerate(spec.args) if a.kind == "b" and a.grad]
    f32 = {i: ptypes[i] for i in reduced}
    sums = {i: b.op(LocalAllocOp(local_memref(f32[i], [wg]))) for i in reduced}
    keys = {i: b.op(LocalAllocOp(local_memref(INDEX, [wg]))) for i in reduced}
    for i in reduced:
        sums[i].name_hint = f"sum_{i}"
        keys[i].name_hint = f"key_{i}"
    gid = b.op(GlobalIdOp(0))
    lid = b.op(LocalIdOp(0))
    stride = b.op(GlobalSizeOp(0))
    none = b.index(-1)  # the key of a work-item that has summed nothing
    inits = []
    for i in reduced:
        inits += [b.zero(f32[i]), none]

    def flush(eb: _Emitter, i: int, key: SSAValue, value: SSAValue) -> None:
        """grad_i[key] += value when key is a real index."""
        valid = eb.op(arith.CmpiOp(key, eb.index(0), "sge"))
        then = Block()
        _Emitter(then).op(AtomicAddOp(value, arg[("grad", i)], [key]))
        then.add_op(scf.YieldOp())
        eb.op(scf.IfOp(valid, [], Region(then)))

    # The strided loop: (sum, key) per reduced argument is loop-carried.
    body = Block(arg_types=[INDEX, *[t for i in reduced for t in (f32[i], INDEX)]])
    lb = _Emitter(body)
    carried = {i: (body.args[1 + 2 * k], body.args[2 + 2 * k]) for k, i in enumerate(reduced)}
    fresh: dict[int, tuple[SSAValue, SSAValue]] = {}

    def take(i: int, index: SSAValue, g: SSAValue) -> None:
        total, key = carried[i]
        changed = lb.op(arith.CmpiOp(key, index, "ne"))
        then = Block()
        flush(_Emitter(then), i, key, total)
        then.add_op(scf.YieldOp())
        lb.op(scf.IfOp(changed, [], Region(then)))
        base = lb.op(arith.SelectOp(changed, lb.zero(f32[i]), total))
        fresh[i] = (lb.op(arith.AddfOp(base, g)), index)

    scalar_body(lb, body.args[0], take)
    body.add_op(scf.YieldOp(*[v for i in reduced for v in fresh[i]]))
    n = arg[("n",)]
    if spec.blocked:  # elements [gid * block, min(gid * block + block, n)), block = ceil(n / size)
        one = b.index(1)
        block = b.op(arith.DivUIOp(b.op(arith.AddiOp(n, b.op(arith.SubiOp(stride, one)))), stride))
        start = b.op(arith.MuliOp(gid, block))
        stop = b.op(arith.MinUIOp(b.op(arith.AddiOp(start, block)), n))
        loop = b.op(scf.ForOp(start, stop, one, inits, Region(body)))
    else:
        loop = b.op(scf.ForOp(gid, n, stride, inits, Region(body)))
    results = loop.results

    # Each work-item's (sum, key) into local memory, then a tree over the work-group.
    for k, i in enumerate(reduced):
        b.op(memref.StoreOp.get(results[2 * k], sums[i], [lid]))
        b.op(memref.StoreOp.get(results[2 * k + 1], keys[i], [lid]))
    b.op(BarrierOp())
    half = wg // 2
    while half >= 1:
        active = b.op(arith.CmpiOp(lid, b.index(half), "ult"))
        step = Block()
        sb = _Emitter(step)
        other = sb.op(arith.AddiOp(lid, sb.index(half)))
        for i in reduced:
            mine_key = sb.op(memref.LoadOp.get(keys[i], [lid]))
            other_key = sb.op(memref.LoadOp.get(keys[i], [other]))
            other_sum = sb.op(memref.LoadOp.get(sums[i], [other]))
            same = sb.op(arith.CmpiOp(mine_key, other_key, "eq"))
            merge = Block()
            mb = _Emitter(merge)
            mine = mb.op(memref.LoadOp.get(sums[i], [lid]))
            mb.op(memref.StoreOp.get(mb.op(arith.AddfOp(mine, other_sum)), sums[i], [lid]))
            merge.add_op(scf.YieldOp())
            apart = Block()
            flush(_Emitter(apart), i, other_key, other_sum)
            apart.add_op(scf.YieldOp())
            sb.op(scf.IfOp(same, [], Region(merge), Region(apart)))
        step.add_op(scf.YieldOp())
        b.op(scf.IfOp(active, [], Region(step)))
        b.op(BarrierOp())
        half //= 2
    leader = b.op(arith.CmpiOp(lid, b.index(0), "eq"))
    last = Block()
    eb = _Emitter(last)
    for i in reduced:
        flush(eb, i, eb.op(memref.LoadOp.get(keys[i], [eb.index(0)])), eb.op(memref.LoadOp.get(sums[i], [eb.index(0)])))
    last.add_op(scf.YieldOp())
    b.op(scf.IfOp(leader, [], Region(last)))
    b.op(func.ReturnOp())


def broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> list[int]:
    """Element strides of a C-contiguous `shape` seen as `out` (0 where it is broadcast)."""
    rank = len(out)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    strides = [0] * rank
    step = 1
    for d in reversed(range(rank)):
        strides[d] = 0 if padded[d] == 1 and out[d] != 1 else step
        step *= padded[d]
    return strides


def lower_kernel_module(module: ModuleOp, spec) -> None:
    """Runs the differentiation pipeline over the kernel module."""
    from diffc.compiler import differentiate
    from diffc.runtime.errors import RuntimeDiffcError

    from diffc.runtime.kernel_scope import keep_kernel_scope

    module.verify()
    differentiate(module)
    keep_kernel_scope(module, spec.function)  # (globals only entry points bind: kernel_scope.py)
    left = {op.name for op in module.walk() if op.name.startswith("diff.")}
    if left:
        raise RuntimeDiffcError(f"error: {spec.mode} of @{spec.function}: ops {sorted(left)} remain after the pipeline")


# -- vector lane ops the element-wise kernels use -----------------------------------------
# The emitter's expression table is keyed by op name; these fill in the three vector ops the
# vector form needs unless the backend already prints them.


def _lane(op) -> int:
    return int(op.static_position.get_values()[0])


def _vector_extract(fe, op) -> str:
    return f"{fe.expr(op.vector)}.s{_lane(op):x}"


def _vector_broadcast(fe, op) -> str:
    return f"({fe.ctype(op.vector.type, op)})({fe.expr(op.source)})"


def _vector_insert(fe, op) -> str:
    t = op.dest.type
    n = t.get_shape()[0]
    lane = _lane(op)
    dest = fe.expr(op.dest)
    parts = [fe.expr(op.source) if k == lane else f"{dest}.s{k:x}" for k in range(n)]
    return f"({fe.ctype(t, op)})({', '.join(parts)})"


def _register_vector_expressions() -> None:
    from diffc.backend.opencl.expressions import EXPRESSIONS

    EXPRESSIONS.setdefault("vector.extract", _vector_extract)
    EXPRESSIONS.setdefault("vector.broadcast", _vector_broadcast)
    EXPRESSIONS.setdefault("vector.insert", _vector_insert)


_register_vector_expressions()
