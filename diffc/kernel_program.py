"""What the kernel pipeline built, as plain data the runtime launches from: the OpenCL C and, per
kernel, its parameters (their ABI roles), what its checks report (sites, status slots), the
launch-time proofs of its accesses and accumulate-gradients' kernels. The passes record these as
module attributes; this module is the only reader, so the runtime imports no pass.

    low = front.clone(); compiler.lower_kernels(low, settings)
    prog = compiler.kernel_program(low, settings, front)   # KernelProgram: prog.source, prog.kernels, ...

Everything here pickles (the module cache keeps a KernelProgram); device objects are the
runtime's (runtime/dispatch.py makes them from this).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diffc.diagnostics import DiffcError
from diffc.pipeline import KernelSettings

# (the passes are imported where their records are read: a program the module cache kept loads
# without them)


@dataclass(frozen=True)
class Site:
    """A checked access (bounds-check, uninit-check): where a status row points."""

    function: str
    buffer: str
    what: str  # load, store, atomic
    where: str
    groupshared: str = ""  # the groupshared variable the buffer is, if it is one


@dataclass(frozen=True)
class Proof:
    """Kernel `kernel`'s accesses to `buffer` at `offset + scale x thread + extra` are in bounds
    when offset + scale x (n - 1) + extra < the buffer's length, n the thread's range: the global
    size along `dim`, or `limit_factor` x the parameter `limit` (a grid-stride loop's counter),
    and at most `count` where a guard says so; `variant` runs them unguarded."""

    kernel: str
    variant: str
    buffer: str
    offset: str  # the offset parameter's name, or ""
    dim: int
    count: str = ""  # a parameter that guards the accesses (global id < count), or ""
    scale: int = 1  # the index is offset + scale x global id + extra
    extra: int = 0
    limit: str = ""  # the parameter bounding a grid-stride loop's counter, or ""
    limit_factor: int = 1
    group: int = 0  # > 0: the thread is a group id along dim, below the global size / group


@dataclass(frozen=True)
class StatusSlot:
    """A status global (diffc/kernel_support/status_report.py): a loop-overrun check or nan-check's status."""

    name: str  # the global's (and then the kernel parameter's) name
    kind: str  # "overrun", "stopped" (a while loop that derivative code stopped: count is a lower bound), "nan"
    where: str  # file:line:col or ""
    function: str
    max_iters: int = 0
    sites: tuple[str, ...] = ()  # (nan) nan-check's sites, "function|op|file:line:col" each


@dataclass(frozen=True)
class KernelParam:
    name: str
    type: object
    kind: str  # its role in the kernel ABI (dialects/abi.py): pointer, buffer, offset, value, or one the
    # runtime supplies for a check (length, shadow, track, status), or a texture's texels, width, height, dims
    is_global: bool = False
    of: str = ""  # what a paired or check role belongs to (lower_entry_points.KernelParam.of)
    lanes: int = 0  # a texture's scalars per texel

    @property
    def supplied(self) -> bool:
        """Whether the runtime passes it itself (a check's length, shadow, track or status)."""
        return self.kind in ("length", "shadow", "track", "status")


@dataclass(frozen=True)
class EntryKernelInfo:
    name: str  # the entry point's symbol
    c_name: str  # its name in the OpenCL program
    params: tuple[KernelParam, ...]
    thread_ids: dict  # parameter name -> semantic (SV_DispatchThreadID, ...)
    numthreads: tuple[int, int, int]
    status: tuple[StatusSlot, ...] = ()  # the status globals it takes, in parameter order
    bounds_sites: tuple[Site, ...] | None = None  # bounds-check's sites, when it takes their status
    uninit_sites: tuple[Site, ...] | None = None  # uninit-check's, when it takes their status
    proofs: tuple[Proof, ...] = ()  # of its thread-indexed accesses (bounds-check)
    inbounds: str | None = None  # the C name of the variant launched when they all hold


@dataclass(frozen=True)
class AccumulatedPlan:
    """accumulate-gradients' kernels of entry point `of` (passes/accumulate_gradients.py)."""

    of: str
    c_name: str
    finish_c_name: str
    slots: int
    group: int  # work-items per group of the accumulated kernel
    entry_group: int  # the entry point's (its dispatch's virtual groups)
    finish_group: int  # work-items of each of the finish kernel's groups (one group per slot)
    params: tuple[str, ...]  # the accumulated kernel's parameter names, in order
    finish_params: tuple[str, ...]
    # the parameters the runtime sets: the entry point's group count, the partial sums' buffer,
    # the mode (deterministic or not) and the partial sums' length (bounds-check's, where it added one)
    groups_param: str
    partials_param: str
    mode_param: str
    partials_length_param: str
    proofs: tuple[Proof, ...] = ()
    inbounds: str | None = None
    finish_proofs: tuple[Proof, ...] = ()
    finish_inbounds: str | None = None


@dataclass
class KernelProgram:
    """The OpenCL C of a module's kernels, the options to build it with, and what binds them."""

    source: str
    build_options: tuple[str, ...]
    index_type: str  # the C type of `index` ("long" or "int")
    kernels: dict[str, EntryKernelInfo] = field(default_factory=dict)
    accumulated: dict[str, AccumulatedPlan] = field(default_factory=dict)  # entry -> its accumulated kernels


class KernelABIError(DiffcError):
    """A kernel whose parameters the runtime cannot bind by name."""


# -- readers of what the passes recorded -------------------------------------------------------


def is_compute_entry(fn) -> bool:
    from diffc.passes.lower_entry_points import is_compute_entry as compute_entry

    return compute_entry(fn)


def numthreads(fn) -> tuple[int, int, int]:
    """The `[numthreads(x, y, z)]` of an entry point ((1, 1, 1) when it has none)."""
    from diffc.passes.lower_entry_points import numthreads as threads

    return threads(fn)


def _rows(module, key: str) -> list[str]:
    from xdsl.dialects.builtin import ArrayAttr, StringAttr

    rows = module.attributes.get(key)
    return [r.data for r in (rows.data if isinstance(rows, ArrayAttr) else ()) if isinstance(r, StringAttr)]


def _site(row: str) -> Site:
    from diffc.passes.bounds_check import GROUPSHARED_PREFIX

    site = Site(*row.split("|", 3))
    if site.buffer.startswith(GROUPSHARED_PREFIX):  # (a groupshared index counts its scalars)
        return Site(site.function, site.buffer, site.what, site.where, site.buffer[len(GROUPSHARED_PREFIX):])
    return site


def bounds_sites(module) -> list[Site]:
    from diffc.passes.bounds_check import SITES

    return [_site(r) for r in _rows(module, SITES)]


def uninit_sites(module) -> list[Site]:
    from diffc.passes.uninit_check import SITES

    return [_site(r) for r in _rows(module, SITES)]


def bounds_proofs(module) -> list[Proof]:
    from diffc.passes.bounds_check import PROOFS as BOUNDS_PROOFS

    out = []
    for r in _rows(module, BOUNDS_PROOFS):
        kernel, variant, buffer, offset, dim, count, scale, extra = r.split("|")
        limit, _, factor = dim.partition("*")  # "<parameter>*<c>": a grid-stride loop's counter
        group = 0
        if factor:
            d = 0
        elif dim.startswith("g"):  # "g<d>/<R>": a group id
            d, group = (int(x) for x in dim[1:].split("/"))
            limit, factor = "", "1"
        else:
            d, limit, factor = int(dim), "", "1"
        out.append(Proof(kernel, variant, buffer, offset, d, count, int(scale), int(extra), limit, int(factor), group))
    return out


def entry_proofs(low, entry: str) -> list[Proof]:
    """bounds-check's proofs of entry point `entry`'s kernel in `low` (lowered): when they all
    hold for a launch (runtime/bounds.py's `proven`), its __inbounds variant runs."""
    return [p for p in bounds_proofs(low) if p.kernel == entry]


def keep_launched_form(low, entry: str, inbounds: bool) -> None:
    """Leaves one form of entry point `entry`'s kernel in `low` (lowered): its __inbounds variant,
    under the entry point's name, where `inbounds`, else the checked kernel. The other form, the
    __inbounds clones of callees that only the variant called, and the proofs that chose between
    the two go. For a launch whose arguments are known before its program is built (diffc run):
    the device then compiles only the kernel that runs."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr, StringAttr

    from diffc.dialects import kernel
    from diffc.kernel_support.bounds_proofs import INBOUNDS_SUFFIX
    from diffc.passes.bounds_check import PROOFS

    rows = _rows(low, PROOFS)
    own = [r for r in rows if r.split("|", 1)[0] == entry]
    if not own:
        return
    variant = own[0].split("|")[1]
    funcs = {f.sym_name.data: f for f in low.ops if isinstance(f, func.FuncOp)}
    gone = {entry if inbounds else variant}
    if inbounds:
        funcs[variant].sym_name = StringAttr(entry)
    else:  # the clones the variant reached, which nothing left calls
        while True:
            called = {c.callee.root_reference.data for n, f in funcs.items() if n not in gone
                      for c in f.walk() if isinstance(c, func.CallOp)}
            dead = {n for n, f in funcs.items() if n not in gone and n.endswith(INBOUNDS_SUFFIX)
                    and n not in called and not kernel.is_kernel(f)}
            if not dead:
                break
            gone |= dead
    for n in gone:
        low.body.block.detach_op(funcs[n])
        funcs[n].erase()
    rest = [r for r in rows if r not in own]
    if rest:
        low.attributes[PROOFS] = ArrayAttr([StringAttr(r) for r in rest])
    else:
        del low.attributes[PROOFS]


def status_slots(module) -> list[StatusSlot]:
    """The status globals of a module, in declaration order (from the globals, or after
    lower-entry-points from the module attribute it leaves, see status_report.stash_slots)."""
    from diffc.passes.nan_check import SITES as NAN_SITES
    from diffc.kernel_support.status_report import SLOTS, stash_slots

    if SLOTS not in module.attributes:
        stash_slots(module)
    sites = tuple(_rows(module, NAN_SITES))
    out = []
    for row in _rows(module, SLOTS):
        name, kind, at, function, bound = row.split("|")
        out.append(StatusSlot(name, kind, at, function, int(bound), sites if kind == "nan" else ()))
    return out


def grow_max_iters(module, slot: StatusSlot, count: int) -> bool:
    """Raises the [MaxIters] of the loop `slot` is about (found by its source location in the
    front end's module) to max(count, 2 x its bound); False when no loop is there."""
    from xdsl.dialects import scf
    from xdsl.dialects.builtin import IntegerAttr, i64

    from diffc.dialects import diff
    from diffc.kernel_support.status_report import where

    grown = False
    for op in module.walk():
        if isinstance(op, scf.WhileOp | scf.ForOp) and where(op) == slot.where and slot.where:
            n = diff.max_iters(op) or slot.max_iters
            op.attributes[diff.MAX_ITERS] = IntegerAttr(max(count, 2 * n), i64)
            grown = True
    return grown


def entry_points(module, entry: str | None = None) -> dict:
    """The functions of a front end's `module` that become kernels: `entry`, else every compute
    entry point."""
    from xdsl.dialects import func

    funcs = [f for f in module.ops if isinstance(f, func.FuncOp)]
    if entry is not None:
        return {f.sym_name.data: f for f in funcs if f.sym_name.data == entry}
    return {f.sym_name.data: f for f in funcs if is_compute_entry(f)}


def thread_ids(fn) -> dict[str, str]:
    """An entry point's thread-id parameters (before lowering): name -> semantic."""
    from xdsl.dialects.builtin import StringAttr

    from diffc.passes.lower_entry_points import SEMANTIC, param_names

    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    names = param_names(fn)
    ids = {}
    for i, a in enumerate(attrs):
        sem = a.data.get(SEMANTIC)
        if isinstance(sem, StringAttr):
            ids[names[i]] = sem.data
    return ids


def _params(kernel, globals_: set[str]) -> tuple[KernelParam, ...]:
    from xdsl.dialects.builtin import MemRefType

    from diffc.passes.lower_entry_points import kernel_params, param_names

    names = param_names(kernel)
    for i, n in enumerate(names):
        if n in names[:i]:
            raise KernelABIError(
                f"error: @{kernel.sym_name.data}: two parameters are named '{n}' (an IR name hint loses a "
                "`_<digits>` suffix: name such parameters with the argument attribute diffc.name)"
            )
    return tuple(KernelParam(p.name, p.type, p.role, isinstance(p.type, MemRefType) and p.name in globals_, p.of, p.lanes)
                 for p in kernel_params(kernel))


def entry_kernel_params(low, front, entry: str) -> tuple[KernelParam, ...]:
    """The parameters of entry point `entry`'s kernel in `low` (lowered from `front`)."""
    from xdsl.dialects import func

    kernel = next(f for f in low.ops if isinstance(f, func.FuncOp) and f.sym_name.data == entry)
    globals_ = {g.sym_name.data for g in front.ops if g.name == "memref.global"}
    return _params(kernel, globals_ | {s.name for s in status_slots(low)})


def read_program(low, front, source: str, names: dict[str, str], settings: KernelSettings,
                 build_options: tuple[str, ...], entry: str | None = None) -> KernelProgram:
    """The KernelProgram of `low` (lowered from the front end's `front` by lower_kernels; `entry`
    as given there), `source` its OpenCL C, `names` the emitter's symbol -> C name."""
    from xdsl.dialects import func

    entries = entry_points(front, entry)
    globals_ = {g.sym_name.data for g in front.ops if g.name == "memref.global"}
    slots = {s.name: s for s in status_slots(low)}
    sites = tuple(bounds_sites(low))
    unread = tuple(uninit_sites(low))
    proofs = bounds_proofs(low)
    kernels = {}
    for f in low.ops:
        if isinstance(f, func.FuncOp) and f.sym_name.data in entries:
            name = f.sym_name.data
            params = _params(f, globals_ | set(slots))
            checks = {p.of for p in params if p.kind == "status"}
            own = tuple(p for p in proofs if p.kernel == name)
            kernels[name] = EntryKernelInfo(
                name, names[name], params, thread_ids(entries[name]), numthreads(entries[name]),
                tuple(slots[p.of] for p in params if p.kind == "status" and p.of in slots),
                sites if "bounds" in checks else None, unread if "uninit" in checks else None,
                own, names[own[0].variant] if own else None,
            )
    return KernelProgram(source, build_options, settings.index_type, kernels, accumulated_plans(low, names, proofs))


def accumulated_plans(low, names: dict[str, str], proofs: list[Proof]) -> dict[str, AccumulatedPlan]:
    """Entry point name -> its accumulated kernels, from the lowered module and the emitter's
    C names."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import IntegerAttr, StringAttr

    from diffc.passes.accumulate_gradients import ACCUMULATE_OF, ACCUMULATE_SLOTS, DETERMINISTIC, GROUPS, PARTIALS
    from diffc.passes.bounds_check import LEN_PREFIX
    from diffc.kernel_support.bounds_proofs import INBOUNDS_SUFFIX
    from diffc.passes.lower_entry_points import param_names
    from diffc.dialects.kernel import work_group_size as _work_group_size

    funcs = {f.sym_name.data: f for f in low.ops if isinstance(f, func.FuncOp)}

    def proven_by(kernel: str) -> tuple[tuple, str | None]:
        own = tuple(p for p in proofs if p.kernel == kernel)
        return own, (names[own[0].variant] if own else None)

    out = {}
    for name, f in funcs.items():
        if name.endswith(INBOUNDS_SUFFIX):
            continue  # bounds-check's variant of an accumulated kernel (its attributes cloned)
        of = f.attributes.get(ACCUMULATE_OF)
        slots = f.attributes.get(ACCUMULATE_SLOTS)
        if isinstance(of, StringAttr) and isinstance(slots, IntegerAttr):
            finish = f"{of.data}__accum_finish"
            own, inbounds = proven_by(name)
            finish_own, finish_inbounds = proven_by(finish)
            out[of.data] = AccumulatedPlan(
                of.data, names[name], names[finish], slots.value.data, _work_group_size(f)[0],
                _work_group_size(funcs[of.data])[0], _work_group_size(funcs[finish])[0],
                tuple(param_names(f)), tuple(param_names(funcs[finish])), GROUPS, PARTIALS, DETERMINISTIC,
                LEN_PREFIX + PARTIALS, own, inbounds, finish_own, finish_inbounds,
            )
    return out
