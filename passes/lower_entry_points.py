"""lower-entry-points: front-end compute entry points -> kernel form (dialects/kernel.py).

Runs on plain IR (after the differentiation pipeline, `diffc.compiler.AD_PIPELINE`):

* Every buffer (`memref.global`) a function reads or writes, itself or through its callees,
  becomes a trailing memref parameter of that function, named after the buffer, in the order the
  buffers are declared; calls pass the caller's parameter along; `memref.get_global` goes away,
  and so do the `memref.global` ops (OpenCL has no program-scope buffers).
* `memref.atomic_rmw` (Slang's `+=` on an `Atomic<T>` element, Interlocked*, Atomic<T>
  methods): an addf on f32 or addi on i32 whose result is unused becomes `kernel.atomic_add`
  (devices have fast float adds for it); every other supported kind (addf on f16 or f32, addi,
  maxs, maxu, mins, minu on i32) becomes `kernel.atomic_rmw`, which returns the old value.
* A `memref.global` in the work-group memory space (a Slang `groupshared` global) is threaded
  the same way to the functions that use it, but an entry point allocates it itself
  (`kernel.local_alloc` at its top: OpenCL's `__local` array) instead of taking a parameter.
* The entry points get `kernel.entry` and `kernel.reqd_work_group_size` from
  `diffc.numthreads`. An argument with `diffc.semantic` becomes work-item queries:
  SV_DispatchThreadID -> kernel.global_id, SV_GroupThreadID -> kernel.local_id,
  SV_GroupID -> kernel.group_id (a `uint3` is read one component at a time through
  `vector.extract`; a scalar `uint` is dimension 0).

A kernel's parameters, in order: the entry point's own parameters without the thread-id ones
(a Slang pointer is a `memref<?xE>` and an `index` offset; scalars and vectors by value; each
keeps its name hint, which the runtime binds arguments by), then the buffers it uses in the
order they are declared. A parameter named like one of those buffers is an error.
Each kernel parameter's role in the ABI is its `diff.abi` argument attribute (dialects/abi.py):
the front end gives a pointer's two parameters theirs; this pass gives every other one its plain
role (a memref is a buffer, anything else a value); `kernel_params` reads them.
A parameter's name is its `diffc.name` argument attribute where it has one, else its name
hint: xDSL drops a `_<digits>` suffix from name hints (`bias_0` -> `bias`), so a front end
names such parameters (array leaves) with the attribute; buffer parameters get it here.

Which functions are entry points: every `diffc.shader = "compute"` function, or with
`entry=NAME` only that one. `entry` may also name a function without parameters or results
that is not a shader (Slang test programs' `void main()` with printf): it becomes a kernel that
one work-item runs. Dispatching exactly numthreads x groups work-items needs no bounds check,
which is what Slang does; so no bounds are added.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, vector
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    AnyFloat,
    Float16Type,
    Float32Type,
    MemRefType,
    ModuleOp,
    StringAttr,
    VectorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from diffc.diagnostics import pass_error
from diffc.dialects.abi import ABI, AbiRoleAttr, abi_problem, role_of, with_role
from diffc.dialects import kernel
from diffc.kernel_support.kernel_params import NAME, param_names
from diffc.kernel_support.status_report import STATUS_PREFIX, stash_slots

SHADER = "diffc.shader"
NUMTHREADS = "diffc.numthreads"
SEMANTIC = "diffc.semantic"
_QUERIES = {
    "SV_DispatchThreadID": kernel.GlobalIdOp,
    "SV_GroupThreadID": kernel.LocalIdOp,
    "SV_GroupID": kernel.GroupIdOp,
}
# MLIR's AtomicRMWKind numbers of the kinds this pass does not lower, for the error message.
_OTHER_KINDS = {2: "assign", 3: "maximumf", 6: "minimumf", 9: "mulf", 10: "muli", 11: "ori", 12: "andi",
                13: "maxnumf", 14: "minnumf"}


def numthreads(fn: func.FuncOp) -> tuple[int, int, int]:
    """The `[numthreads(x, y, z)]` of an entry point ((1, 1, 1) when it has none)."""
    attr = fn.attributes.get(NUMTHREADS) or fn.attributes.get(kernel.REQD_WORK_GROUP_SIZE)
    if isinstance(attr, DenseArrayBase):
        vals = [int(v) for v in attr.get_values()]
    elif isinstance(attr, ArrayAttr):
        vals = [a.value.data for a in attr.data if isinstance(a, IntegerAttr)]
    else:
        vals = []
    vals = (vals + [1, 1, 1])[:3]
    return (vals[0], vals[1], vals[2])


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a lowered kernel, as the runtime binds it: its role (dialects/abi.py) is
    "pointer" (a memref followed by its offset), "offset" (that index), "buffer" (a memref alone:
    a global buffer, or a pointer-free memref), "value" (a scalar or vector passed by value), or
    one the runtime supplies for a check: "length", "shadow" or "track" of the parameter `of`
    names, or "status" (`of`: "bounds", "uninit" or a status global)."""

    name: str
    type: Attribute
    role: str
    of: str = ""  # what a paired or check role belongs to (a pointer, a texture, a buffer, a check)
    lanes: int = 0  # texels: the scalars of one texel


def kernel_params(fn: func.FuncOp) -> list[KernelParam]:
    """The kernel ABI of `fn` (a lowered entry point), parameter by parameter, as its `diff.abi`
    argument attributes record it (dispatch and `diffc run` read it here). Roles that do not fit
    the parameters (a pass dropped or moved one) are an error, never a guess."""
    problem = abi_problem(fn)
    if problem is not None:
        raise PassFailedException(f"@{fn.sym_name.data}: kernel ABI: {problem}")
    names = param_names(fn)
    params = []
    for i, t in enumerate(fn.function_type.inputs.data):
        role = role_of(fn, i)
        if role is None:  # (abi_problem: a kernel has all its roles or none)
            raise PassFailedException(f"@{fn.sym_name.data}: kernel ABI: the kernel records no parameter roles "
                                      "(lower-entry-points gives them; a kernel written by hand needs diff.abi)")
        params.append(KernelParam(names[i], t, role.role.data, role.pointer.data, role.lanes.data))
    return params


def is_compute_entry(fn: func.FuncOp) -> bool:
    shader = fn.attributes.get(SHADER)
    return isinstance(shader, StringAttr) and shader.data == "compute"


def _fail(fn: func.FuncOp, message: str, at: Operation | None = None) -> PassFailedException:
    """The error about entry point `fn`, located at op `at` of it (default: `fn` itself)."""
    return pass_error(at or fn, f"lower-entry-points: @{fn.sym_name.data}: {message}")


@dataclass(frozen=True)
class LowerEntryPointsPass(ModulePass):
    name = "lower-entry-points"

    entry: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}

        if self.entry:
            fn = funcs.get(self.entry)
            if fn is None:
                shaders = [n for n, f in funcs.items() if is_compute_entry(f)]
                raise PassFailedException(
                    f"lower-entry-points: no function @{self.entry} (compute entry points: "
                    f"{', '.join(shaders) or 'none'})"
                )
            entries = [fn]
        else:
            entries = [f for f in funcs.values() if is_compute_entry(f)]

        threaded = thread_global_buffers(op)
        for fn in entries:
            _make_kernel(fn, threaded.get(fn.sym_name.data, []))


def thread_global_buffers(op: ModuleOp) -> dict[str, list[str]]:
    """Every `memref.global` a function uses becomes its trailing parameter (see the module
    docstring), the globals go, and atomics become kernel ops; returns function -> the buffers
    it was given. Also used on the runtime's element-wise kernels (their status globals)."""
    funcs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
    globals_ = [g for g in op.ops if isinstance(g, memref.GlobalOp)]
    order = {g.sym_name.data: i for i, g in enumerate(globals_)}
    types = {g.sym_name.data: g.type for g in globals_}
    roles = {g.sym_name.data: g.attributes[ABI] for g in globals_ if ABI in g.attributes}  # a texture's buffers
    uses = _buffer_uses(funcs)
    threaded: dict[str, list[str]] = {}
    for name, fn in funcs.items():
        if uses[name] and fn.body.blocks:
            threaded[name] = sorted(uses[name], key=lambda b: order.get(b, len(order)))  # unknown: an error below
            _thread_buffers(fn, threaded[name], types, funcs, uses, order, roles)
    stash_slots(op)  # what the status globals check, for the runtime (status_report.py)
    for g in globals_:
        Rewriter.erase_op(g)
    for fn in funcs.values():
        _atomics(fn)
    return threaded


def _buffer_uses(funcs: dict[str, func.FuncOp]) -> dict[str, set[str]]:
    """Buffers each function uses, itself or through the functions it calls (a fixed point)."""
    direct: dict[str, set[str]] = {n: set() for n in funcs}
    calls: dict[str, set[str]] = {n: set() for n in funcs}
    for name, fn in funcs.items():
        for inner in fn.walk():
            if isinstance(inner, memref.GetGlobalOp):
                direct[name].add(inner.name_.root_reference.data)
            elif isinstance(inner, func.CallOp):
                callee = inner.callee.root_reference.data
                if callee in funcs:
                    calls[name].add(callee)
    changed = True
    while changed:
        changed = False
        for name in funcs:
            for callee in calls[name]:
                if not direct[callee] <= direct[name]:
                    direct[name] |= direct[callee]
                    changed = True
    return direct


def _thread_buffers(fn, buffers, types, funcs, uses, order, roles) -> None:
    """Adds one memref parameter per buffer to `fn`; get_global and calls use them."""
    block = fn.body.block
    args: dict[str, SSAValue] = {}
    for b in buffers:
        if b not in types:
            use = next((o for o in fn.walk() if isinstance(o, memref.GetGlobalOp)
                        and o.name_.root_reference.data == b), None)  # else used through a call
            raise _fail(fn, f"uses @{b}, which is not a memref.global of this module", use)
        arg = block.insert_arg(types[b], len(block.args))
        arg.name_hint = b
        args[b] = arg
    n_old = len(fn.function_type.inputs.data)
    fn.function_type = FunctionType.from_lists(
        [*fn.function_type.inputs.data, *(types[b] for b in buffers)], fn.function_type.outputs.data
    )
    added = [DictionaryAttr(({NAME: StringAttr(b)} if args[b].name_hint != b else {})
                            | ({ABI: roles[b]} if b in roles else {})) for b in buffers]
    if fn.arg_attrs is not None or any(a.data for a in added):
        old = fn.arg_attrs.data if fn.arg_attrs is not None else [DictionaryAttr({}) for _ in range(n_old)]
        fn.arg_attrs = ArrayAttr([*old, *added])
    assert len(block.args) == n_old + len(buffers)
    for inner in list(fn.walk()):
        if isinstance(inner, memref.GetGlobalOp):
            Rewriter.replace_op(inner, [], [args[inner.name_.root_reference.data]])
        elif isinstance(inner, func.CallOp):
            callee = inner.callee.root_reference.data
            extra = sorted(uses.get(callee, ()), key=order.__getitem__)
            if extra and callee in funcs and funcs[callee].body.blocks:
                new = func.CallOp(callee, [*inner.arguments, *(args[b] for b in extra)], [r.type for r in inner.results])
                new.attributes.update(inner.attributes)
                Rewriter.replace_op(inner, new)


def _atomics(fn: func.FuncOp) -> None:
    for inner in list(fn.walk()):
        if not isinstance(inner, memref.AtomicRMWOp):
            continue
        number = inner.kind.value.data
        kind = kernel.ATOMIC_RMW_KINDS.get(number)
        if kind is None:
            name = _OTHER_KINDS.get(number, f"number {number}")
            raise _fail(fn, f"'memref.atomic_rmw' {name} is not supported (supported: "
                            f"{', '.join(kernel.ATOMIC_RMW_KINDS.values())})", inner)
        t = inner.memref.type
        assert isinstance(t, MemRefType)
        el = t.element_type
        floats = kind == "addf"
        if floats and not isinstance(el, Float16Type | Float32Type):
            raise _fail(fn, f"'memref.atomic_rmw' addf on {el} elements: only f16 and f32 are supported", inner)
        if not floats and el != i32:
            raise _fail(fn, f"'memref.atomic_rmw' {kind} on {el} elements: only i32 is supported", inner)
        if kind in ("addf", "addi") and not inner.result.uses and not isinstance(el, Float16Type):
            new: Operation = kernel.AtomicAddOp(inner.value, inner.memref, list(inner.indices))
            new.location = inner.location  # bounds-check's reports point at the source
            Rewriter.replace_op(inner, new, [None])
        else:
            new = kernel.AtomicRMWOp(kind, inner.value, inner.memref, list(inner.indices))
            new.location = inner.location
            new.result.name_hint = inner.result.name_hint
            Rewriter.replace_op(inner, new)


def _check_kernel_param(fn: func.FuncOp, arg: SSAValue, name: str, buffers: set[str]) -> None:
    """A parameter the host can pass: a buffer (global memref), a scalar or a vector."""
    t = arg.type
    if isinstance(t, MemRefType):
        if kernel.memory_space(t) is not None:
            raise _fail(fn, f"parameter '{name}' is a memref in memory space {kernel.memory_space(t)}; "
                            "an entry point takes global buffers only")
    elif isinstance(t, VectorType):
        if not isinstance(t.element_type, AnyFloat | IntegerType):
            raise _fail(fn, f"parameter '{name}' has type {t}, which a kernel cannot take")
    elif not isinstance(t, AnyFloat | IntegerType | IndexType):
        raise _fail(fn, f"parameter '{name}' has type {t}, which a kernel cannot take")
    if name in buffers:
        raise _fail(fn, f"parameter '{name}' has the name of the buffer @{name} it uses; rename one of them")


def _make_kernel(fn: func.FuncOp, buffers: list[str]) -> None:
    """`buffers`: the names of the trailing buffer parameters _thread_buffers added."""
    if fn.function_type.outputs.data:
        raise _fail(fn, "an entry point must return void")
    if not fn.body.blocks:
        raise _fail(fn, "an entry point needs a body")
    block = fn.body.block
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    names = param_names(fn)
    keep: list[int] = []
    for i, arg in enumerate(list(block.args)):
        sem = attrs[i].data.get(SEMANTIC) if i < len(attrs) else None
        if sem is None:
            # the buffers of globals it uses (status globals of checks and bounded loops among them)
            # are parameters of any entry point; a plain main() has no parameters of its own
            if not is_compute_entry(fn) and i < len(block.args) - len(buffers):
                raise _fail(fn, "a non-shader entry point must have no parameters")
            if i < len(block.args) - len(buffers):
                _check_kernel_param(fn, arg, names[i], set(buffers))
            keep.append(i)
            continue
        assert isinstance(sem, StringAttr)
        query = _QUERIES.get(sem.data)
        if query is None:
            raise _fail(fn, f"semantic {sem.data} is not supported (supported: {', '.join(_QUERIES)})")
        _replace_semantic(fn, arg, query)
    # work-group memory (a groupshared global): the kernel's own `__local` array, not a parameter
    first_buffer = len(block.args) - len(buffers)
    for i in range(first_buffer, len(block.args)):
        if kernel.memory_space(block.args[i].type) == kernel.LOCAL_MEMORY_SPACE:
            alloc = kernel.LocalAllocOp(block.args[i].type)
            alloc.result.name_hint = buffers[i - first_buffer]
            alloc.attributes[NAME] = StringAttr(buffers[i - first_buffer])  # (bounds-check names it so)
            Rewriter.insert_op(alloc, InsertPoint.at_start(block))
            block.args[i].replace_all_uses_with(alloc.result)
            keep.remove(i)
    for i in reversed(range(len(block.args))):
        if i not in keep:
            block.erase_arg(block.args[i])
    inputs = fn.function_type.inputs.data
    fn.function_type = FunctionType.from_lists([inputs[i] for i in keep], [])
    if fn.arg_attrs is not None:
        fn.arg_attrs = ArrayAttr([attrs[i] for i in keep]) if keep else None
    _status_roles(fn)
    kernel.mark_kernel(fn, numthreads(fn))  # (and the plain ABI roles: buffers for the globals)


def _status_roles(fn: func.FuncOp) -> None:
    """The status globals' parameters (diffc/kernel_support/status_report.py) are status buffers the runtime
    supplies: `#diff.abi<status of "diffc_status_<k>">`."""
    names = param_names(fn)
    if not any(n.startswith(STATUS_PREFIX) for n in names):
        return
    old = fn.arg_attrs.data if fn.arg_attrs is not None else [DictionaryAttr({}) for _ in names]
    fn.arg_attrs = ArrayAttr([with_role(d, AbiRoleAttr("status", n)) if n.startswith(STATUS_PREFIX) else d
                              for d, n in zip(old, names)])


def _query(ip: InsertPoint, query: type, dim: int, t) -> SSAValue:
    q = query(dim)
    Rewriter.insert_op(q, ip)
    if isinstance(t, IndexType):
        return q.result
    cast = arith.IndexCastOp(q.result, t)
    Rewriter.insert_op(cast, InsertPoint.after(q))
    return cast.result


def _replace_semantic(fn: func.FuncOp, arg: SSAValue, query: type) -> None:
    t = arg.type
    start = InsertPoint.at_start(fn.body.block)
    if isinstance(t, VectorType):
        comps: dict[int, SSAValue] = {}
        for use in list(arg.uses):
            user = use.operation
            pos = user.static_position.get_values() if isinstance(user, vector.ExtractOp) else ()
            if not isinstance(user, vector.ExtractOp) or user.dynamic_position or len(pos) != 1:
                raise _fail(fn, f"the {t} thread id is used by '{user.name}'; read its components (.x, .y, .z)", user)
            d = int(pos[0])
            if d not in comps:
                comps[d] = _query(start, query, d, t.element_type)
            Rewriter.replace_op(user, [], [comps[d]])
    elif isinstance(t, IntegerType | IndexType):
        if arg.uses:
            arg.replace_all_uses_with(_query(start, query, 0, t))
    else:
        raise _fail(fn, f"a thread id of type {t} is not supported")
