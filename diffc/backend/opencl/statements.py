"""One function's body as C statements: values become named variables, scf becomes C control
flow, memref becomes pointer and array accesses, kernel ops become OpenCL builtins."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, func, math, memref, printf, scf
from xdsl.dialects.builtin import Float32Type, IntegerAttr, IntegerType, MemRefType, VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from diffc.dialects import kernel
from diffc.dialects.kernel import LOCAL_MEMORY_SPACE, NULL_POINTER_ATTR, memory_space

from . import atomics
from .expressions import EXPRESSIONS, constant_literal
from .function_context import FunctionContext
from .naming import address_space, is_half_storage, pointer_ctype
from .printf import emit_printf

_ID_BUILTINS = {
    kernel.GlobalIdOp: "get_global_id", kernel.LocalIdOp: "get_local_id",
    kernel.GroupIdOp: "get_group_id", kernel.GlobalSizeOp: "get_global_size",
    kernel.LocalSizeOp: "get_local_size", kernel.NumGroupsOp: "get_num_groups",
}


class FunctionEmitter(FunctionContext):
    """A function's statements: control flow, calls, memory and kernel ops (expressions come
    from expressions.py, printf from printf.py)."""

    def assign_all(self, targets: Sequence[str], values: Sequence[SSAValue], op: Operation) -> None:
        """targets[i] = values[i] for all i at once (a swap goes through temporaries)."""
        pending = [(t, self.expr(v), v) for t, v in zip(targets, values) if t != self.expr(v)]
        if len(pending) > 1 and any(e in targets for _, e, _ in pending):
            temps = []
            for target, e, v in pending:
                tmp = self.namer.fresh(f"{target}_next")
                self.line(f"{self.ctype(v.type, op)} {tmp} = {e};")
                temps.append((target, tmp))
            for target, tmp in temps:
                self.line(f"{target} = {tmp};")
            return
        for target, e, _ in pending:
            self.line(f"{target} = {e};")

    # -- functions -------------------------------------------------------------------------

    def param(self, arg: SSAValue) -> str:
        name = self.fresh(arg, f"arg{arg.index}")  # type: ignore[attr-defined]
        self.values[arg] = name
        t = arg.type
        if isinstance(t, MemRefType):
            self.module.note_type(t)
            return f"{pointer_ctype(t, self.options)} {name}"
        c = self.ctype(t, self.fn)
        if self.kernel and c == "bool":
            c = "int"  # bool is not a valid kernel argument type
        return f"{c} {name}"

    def emit(self, c_name: str, signature: str) -> list[str]:
        """[head, body lines..., "}"]; `signature` is what precedes the name, e.g. `__kernel void`."""
        block = self.fn.body.blocks[0]
        params = ", ".join(self.param(a) for a in block.args) or "void"
        head = f"{signature} {c_name}({params})"
        self.emit_block(block)
        return [head, *self.lines, "}"]

    def emit_block(self, block: Block) -> None:
        for op in block.ops:
            self.emit_op(op)

    def emit_body(self, block: Block, args: Sequence[str], targets: Sequence[str]) -> None:
        """A region's block: its arguments are the C variables `args`; its terminator's operands
        are assigned to `targets`."""
        for arg, name in zip(block.args, args):
            self.values[arg] = name
        self.depth += 1
        for op in block.ops:
            if op is block.last_op and isinstance(op, scf.YieldOp):
                self.assign_all(targets, op.operands, op)
            else:
                self.emit_op(op)
        self.depth -= 1

    # -- ops -------------------------------------------------------------------------------

    def emit_op(self, op: Operation) -> None:
        handler = EXPRESSIONS.get(op.name)
        if handler is not None:
            if len(op.results) != 1:
                raise self.error(op, "must have one result")
            rhs = handler(self, op)
            if rhs.replace("_", "a").isalnum() and not isinstance(op.results[0].type, MemRefType):
                self.values[op.results[0]] = rhs  # a name or a literal (f16 <-> f32): no copy
            elif _inlined_into_use(op, rhs):
                self.values[op.results[0]] = rhs
                if not _is_atom(rhs):
                    self.compound.add(op.results[0])
            else:
                self.declare(op.results[0], rhs, op)
            return
        method = _STATEMENTS.get(type(op))
        if op.name == "ub.poison" and NULL_POINTER_ATTR in op.attributes and isinstance(op.results[0].type, MemRefType):
            self.module.note_type(op.results[0].type)  # a null pointer's buffer (frontend/optional.py)
            self.values[op.results[0]] = f"(({pointer_ctype(op.results[0].type, self.options)})0)"
            return
        if method is None and op.name == "ub.poison":  # the front end's value of an unassigned buffer
            raise self.error(op, "is used before it is assigned: a buffer (or a struct's buffer field) declared "
                             "without an initializer must be assigned before it is read or passed on")
        if method is None:
            raise self.error(op, "is not supported by the OpenCL emitter")
        method(self, op)

    def constant(self, op: Operation) -> None:
        self.ctype(op.results[0].type, op)
        self.values[op.results[0]] = constant_literal(self, op)  # type: ignore[arg-type]

    def ret(self, op: func.ReturnOp) -> None:
        if not op.operands:
            if op is not self.fn.body.blocks[0].last_op:
                self.line("return;")
            return
        if self.kernel:
            raise self.error(op, "returns values from a kernel; kernels write their results to memrefs")
        if len(op.operands) == 1:
            self.line(f"return {self.bare(op.operands[0])};")
            return
        struct = self.module.result_struct(self.fn)
        tmp = self.namer.fresh("ret")
        self.line(f"{struct} {tmp};")
        for i, v in enumerate(op.operands):
            self.line(f"{tmp}.r{i} = {self.expr(v)};")
        self.line(f"return {tmp};")

    def call(self, op: func.CallOp) -> None:
        callee = self.module.function_name(op.callee.string_value(), op)
        call = f"{callee}({', '.join(self.bare(v) for v in op.operands)})"
        if not op.results:
            self.line(f"{call};")
        elif len(op.results) == 1:
            self.declare(op.results[0], call, op)
        else:
            struct = self.module.result_struct_of(op.callee.string_value(), op)
            tmp = self.namer.fresh(f"{callee}_result")
            self.line(f"{struct} {tmp} = {call};")
            for i, r in enumerate(op.results):
                self.values[r] = f"{tmp}.r{i}"

    def if_(self, op: scf.IfOp) -> None:
        names = self.declare_all_uninitialized(list(op.results), op, "r")
        self.line(f"if ({self.bare(op.cond)}) {{")
        self.emit_body(op.true_region.blocks[0], [], names)
        if op.false_region.blocks and (names or len(op.false_region.blocks[0].ops) > 1):
            self.line("} else {")
            self.emit_body(op.false_region.blocks[0], [], names)
        self.line("}")
        for r, name in zip(op.results, names):
            self.values[r] = name

    def for_(self, op: scf.ForOp) -> None:
        body = op.body.blocks[0]
        iv = body.args[0]
        names = []
        for arg, init, res in zip(body.args[1:], op.iter_args, op.results):
            name = self.namer.fresh(arg.name_hint or res.name_hint, "acc")
            self.line(f"{self.ctype(arg.type, op)} {name} = {self.expr(init)};")
            names.append(name)
        i = self.fresh(iv, "i")
        lb, ub, step = self.expr(op.lb), self.expr(op.ub), self.expr(op.step)
        trips = _constant_trip_count(op)
        # loops the kernel passes keep rolled for the device to unroll (and [ForceUnroll]), and
        # on CPUs every short one; but on CPUs not one that holds a barrier: PoCL builds a loop
        # over the work-items for each barrier of the copies (reduce-atomics' tree, unrolled,
        # took 1.2 of the MLP program's 4 s of build), and there is nothing to keep in registers
        unroll = kernel.UNROLL in op.attributes or (trips is not None and trips <= self.options.unroll)
        if unroll and self.options.unroll and any(isinstance(o, kernel.BarrierOp) for o in op.walk()):
            unroll = False
        if trips is not None and unroll:
            self.line("#pragma unroll")
        self.line(f"for ({self.ctype(iv.type, op)} {i} = {lb}; {i} < {ub}; {i} += {step}) {{")
        if self.options.reassociate and kernel.REASSOCIATE in op.attributes:
            self.depth += 1
            self.line("#pragma clang fp reassociate(on)")  # (first in the block, as clang asks)
            self.depth -= 1
        self.emit_body(body, [i, *names], names)
        self.line("}")
        for r, name in zip(op.results, names):
            self.values[r] = name

    def while_(self, op: scf.WhileOp) -> None:
        before, after = op.before_region.blocks[0], op.after_region.blocks[0]
        carried = []
        for arg, init in zip(before.args, op.arguments):
            name = self.fresh(arg, "w")
            self.line(f"{self.ctype(arg.type, op)} {name} = {self.expr(init)};")
            carried.append(name)
        results = []
        for res, arg in zip(op.results, after.args):
            results.append(self.declare_uninitialized(arg if arg.name_hint else res, op, "r"))
        self.line("while (true) {")
        for arg, name in zip(before.args, carried):
            self.values[arg] = name
        self.depth += 1
        for inner in before.ops:
            if isinstance(inner, scf.ConditionOp):
                self.assign_all(results, inner.args, inner)
                cond = self.expr(inner.condition)
                self.line(f"if (!{cond}) break;" if cond.isidentifier() else f"if (!({cond})) break;")
            else:
                self.emit_op(inner)
        self.depth -= 1
        self.emit_body(after, results, carried)
        self.line("}")
        for r, name in zip(op.results, results):
            self.values[r] = name

    # -- memory ----------------------------------------------------------------------------

    def index(self, op: Operation, ref: SSAValue, indices: Sequence[SSAValue]) -> str:
        """Row-major linear index; every dimension but the first must be static."""
        t = ref.type
        assert isinstance(t, MemRefType)
        if not indices:
            return "0"
        shape = t.get_shape()
        if any(d < 0 for d in shape[1:]):
            raise self.error(op, f"indexes {t}: only the first dimension may be dynamic")
        terms = []
        if len(indices) == 1:
            return self.bare(indices[0])
        for k, v in enumerate(indices):
            stride = 1
            for d in shape[k + 1 :]:
                stride *= d
            e = self.expr(v)
            if e in ("0", "0L") and len(indices) > 1:
                continue
            terms.append(e if stride == 1 else f"{e} * {stride}")
        return " + ".join(terms) or "0"

    def half_pointer(self, ref: SSAValue) -> bool:
        return is_half_storage(ref.type) and ref not in self.arrays

    def load(self, op: memref.LoadOp) -> None:
        idx = self.index(op, op.memref, op.indices)
        ref = self.expr(op.memref)
        rhs = f"vload_half({idx}, {ref})" if self.half_pointer(op.memref) else f"{ref}[{idx}]"
        if _load_into_next_store(op) and len(rhs) <= _MAX_INLINED:
            self.values[op.res] = rhs  # (a postfix or call expression: no parentheses needed)
            return
        self.declare(op.res, rhs, op)

    def store(self, op: memref.StoreOp) -> None:
        idx = self.index(op, op.memref, op.indices)
        ref, value = self.expr(op.memref), self.bare(op.value)
        if self.half_pointer(op.memref):
            self.line(f"vstore_half({value}, {idx}, {ref});")
        else:
            self.line(f"{ref}[{idx}] = {value};")

    def array(self, op: Operation, qualifier: str = "") -> None:
        t = op.results[0].type
        assert isinstance(t, MemRefType)
        if any(d < 0 for d in t.get_shape()):
            raise self.error(op, f"allocates {t}: only static shapes become OpenCL arrays")
        n = 1
        for d in t.get_shape():
            n *= d
        name = self.fresh(op.results[0], "buf")
        self.line(f"{qualifier}{self.ctype(t.element_type, op)} {name}[{n}];")
        self.values[op.results[0]] = name
        self.arrays.add(op.results[0])

    def alloca(self, op: Operation) -> None:
        if memory_space(op.results[0].type) is not None:
            raise self.error(op, "allocates in a memory space; use kernel.local_alloc for local memory")
        self.array(op)

    # -- kernel ops ------------------------------------------------------------------------

    def work_item(self, op: Operation) -> None:
        builtin = _ID_BUILTINS[type(op)]
        c = self.ctype(op.results[0].type, op)
        self.declare(op.results[0], f"({c}){builtin}({op.dim.value.data})", op)  # type: ignore[attr-defined]

    def barrier(self, op: kernel.BarrierOp) -> None:
        fences = "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE" if op.global_fence else "CLK_LOCAL_MEM_FENCE"
        self.line(f"barrier({fences});")

    def local_alloc(self, op: kernel.LocalAllocOp) -> None:
        if not self.kernel or op.parent_op() is not self.fn:
            raise self.error(op, "must be at the top level of a kernel")
        self.array(op, "__shared__ " if self.options.cuda else "__local ")

    def atomic_add(self, op: kernel.AtomicAddOp) -> None:
        t = op.memref.type
        assert isinstance(t, MemRefType)
        where = f"&{self.expr(op.memref)}[{self.index(op, op.memref, op.indices)}]"
        value = self.expr(op.value)
        local = memory_space(t) == LOCAL_MEMORY_SPACE
        if self.options.atomics == "ptx" and not local:
            element = "f32" if isinstance(t.element_type, Float32Type) else "i32"  # the verifier allows these
            self.line(f"{self.module.warp_add_helper(element)}({where}, {value});")
            return
        if not isinstance(t.element_type, Float32Type):
            self.line(f"atomic_add({where}, {value});")
            return
        helper = self.module.atomic_helper(self.options.atomics, local)
        self.line(f"{helper}({where}, {value});")

    def atomic_rmw(self, op: kernel.AtomicRMWOp) -> None:
        t = op.memref.type
        assert isinstance(t, MemRefType)
        kind = op.kind.data
        ref, value = self.expr(op.memref), self.expr(op.value)
        idx = self.index(op, op.memref, op.indices)
        space = address_space(t)
        if op.memref in self.arrays and space != "__local":
            self._private_rmw(op, kind, f"{ref}[{idx}]", value)
            return
        element = _WARP_ADD_ELEMENTS.get((kind, str(t.element_type)))
        if element and not op.result.uses and self.options.atomics == "ptx" and space == "__global":
            # the old value is not needed: a warp-aggregated `red` (half: `p + i`, see below)
            where = f"{ref} + {_operand(idx)}" if element == "f16" else f"&{ref}[{idx}]"
            self.line(f"{self.module.warp_add_helper(element)}({where}, {value});")
            return
        if kind == "addf":
            half = self.half_pointer(op.memref)
            helper = self.module.fetch_add_helper(half, space)
            # `p + i`, not `&p[i]`: a half lvalue is not allowed without cl_khr_fp16
            where = f"{ref} + {_operand(idx)}" if half else f"&{ref}[{idx}]"
            call = f"{helper}({where}, {value})"
        elif kind in atomics.UNSIGNED_KINDS:
            call = f"{atomics.INT_BUILTINS[kind]}((volatile {space} uint*)&{ref}[{idx}], (uint){value})"
            if op.result.uses:
                call = f"(int){call}"
        else:
            call = f"{atomics.INT_BUILTINS[kind]}(&{ref}[{idx}], {value})"
        if op.result.uses:
            self.declare(op.result, call, op)
        else:
            self.line(f"{call};")

    def _private_rmw(self, op: kernel.AtomicRMWOp, kind: str, cell: str, value: str) -> None:
        """Private memory belongs to one work-item: a plain read-modify-write is atomic enough."""
        old = self.declare(op.result, cell, op)
        if kind in ("addf", "addi"):
            new = f"{old} + {value}"
        else:
            fn = "max" if kind.startswith("max") else "min"
            unsigned = kind in atomics.UNSIGNED_KINDS
            new = f"(int){fn}((uint){old}, (uint){value})" if unsigned else f"{fn}({old}, {value})"
        self.line(f"{cell} = {new};")

    def _vector_access(self, op: Operation, ref: SSAValue, vec: Attribute) -> tuple[str, str, int]:
        assert isinstance(vec, VectorType)
        n = vec.get_shape()[0]
        self.ctype(vec, op)
        if self.half_pointer(ref):
            return "half", self.index(op, ref, op.indices), n  # type: ignore[attr-defined]
        t = ref.type
        assert isinstance(t, MemRefType)
        aligned = n != 3 and ref not in self.arrays and address_space(t) == "__global"
        return ("aligned" if aligned else "vloadn"), self.index(op, ref, op.indices), n  # type: ignore[attr-defined]

    def vload(self, op: kernel.VLoadOp) -> None:
        kind, i, n = self._vector_access(op, op.memref, op.result.type)
        ref = self.expr(op.memref)
        vt = self.ctype(op.result.type, op)
        if kind == "half":
            rhs = f"vload_half{n}({i}, {ref})"
        elif kind == "aligned":
            rhs = f"((__global {vt}*){ref})[{i}]"
        else:
            rhs = f"vload{n}({i}, {ref})"
        self.declare(op.result, rhs, op)

    def vstore(self, op: kernel.VStoreOp) -> None:
        kind, i, n = self._vector_access(op, op.memref, op.value.type)
        ref, value = self.expr(op.memref), self.expr(op.value)
        vt = self.ctype(op.value.type, op)
        if kind == "half":
            self.line(f"vstore_half{n}({value}, {i}, {ref});")
        elif kind == "aligned":
            self.line(f"((__global {vt}*){ref})[{i}] = {value};")
        else:
            self.line(f"vstore{n}({value}, {i}, {ref});")


# (atomic_rmw kind, element type) -> the ptx_atomics helper that adds it without returning the old value
_WARP_ADD_ELEMENTS = {("addf", "f16"): "f16", ("addf", "f32"): "f32", ("addi", "i32"): "i32"}


def _operand(expr: str) -> str:
    """`expr` as an operand of `+` (parenthesized unless it is a name or a number)."""
    return expr if expr.replace("_", "a").isalnum() else f"({expr})"


def _ignore(fe: FunctionEmitter, op: Operation) -> None:
    pass


_STATEMENTS = {
    func.ReturnOp: FunctionEmitter.ret,
    func.CallOp: FunctionEmitter.call,
    scf.IfOp: FunctionEmitter.if_,
    scf.ForOp: FunctionEmitter.for_,
    scf.WhileOp: FunctionEmitter.while_,
    memref.LoadOp: FunctionEmitter.load,
    memref.StoreOp: FunctionEmitter.store,
    memref.AllocaOp: FunctionEmitter.alloca,
    memref.AllocOp: FunctionEmitter.alloca,
    memref.DeallocOp: _ignore,
    kernel.BarrierOp: FunctionEmitter.barrier,
    kernel.LocalAllocOp: FunctionEmitter.local_alloc,
    kernel.AtomicAddOp: FunctionEmitter.atomic_add,
    kernel.AtomicRMWOp: FunctionEmitter.atomic_rmw,
    kernel.VLoadOp: FunctionEmitter.vload,
    kernel.VStoreOp: FunctionEmitter.vstore,
    **{t: FunctionEmitter.work_item for t in _ID_BUILTINS},
    arith.ConstantOp: FunctionEmitter.constant,
    printf.PrintFormatOp: emit_printf,
}


def _constant_trip_count(op: scf.ForOp) -> int | None:
    """How many times the loop runs, where its bounds and step are constants."""
    bounds = []
    for v in (op.lb, op.ub, op.step):
        owner = v.owner
        if not (isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)):
            return None
        bounds.append(owner.value.value.data)
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step)) if step > 0 else None


# Users that print each operand once, where a single-use expression can stand for its variable.
_ONE_USE_STATEMENTS = (memref.LoadOp, memref.StoreOp, func.CallOp, func.ReturnOp, scf.IfOp)
# expression handlers that print an operand more than once (or vector lanes at a runtime index)
_REPEATING = {arith.CeilDivSIOp.name, arith.FloorDivSIOp.name, arith.CeilDivUIOp.name,
              math.CountTrailingZerosOp.name}
# a float product is not written into a sum: OpenCL C contracts `a * b + c` in one expression
# into an fma (FP_CONTRACT is on by default), which rounds once where the statements round twice
_SUMS = (arith.AddfOp, arith.SubfOp, arith.NegfOp, arith.ExtFOp, arith.TruncFOp)
# i1 results that are 0 or 1 as C ints too
_BOOLEANS = (arith.CmpiOp, arith.CmpfOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp, arith.TruncIOp, arith.SelectOp)
_MAX_INLINED = 100  # characters of an inlined expression, at most (and so its nesting)


def _inlined_into_use(op: Operation, rhs: str) -> bool:
    """Whether `op`'s value (pure, an EXPRESSIONS op) is printed inside its one use instead of
    as a variable: a scalar used once, by an op of the same block that prints it once (not a
    terminator, whose assignments may overwrite what it reads; not a loop bound, which runs
    every iteration), short enough."""
    result = op.results[0]
    if isinstance(result.type, VectorType | MemRefType) or len(rhs) > _MAX_INLINED:
        return False
    t = result.type
    if isinstance(t, IntegerType) and t.width.data < 32 and not (t.width.data == 1 and isinstance(op, _BOOLEANS)):
        return False  # C computes char and short in int: their variable is what wraps them
    uses = list(result.uses)
    if len(uses) != 1:
        return False
    user = uses[0].operation
    if user.parent_block() is not op.parent_block():
        return False
    if isinstance(op, arith.MulfOp) and isinstance(user, _SUMS):
        return False
    if isinstance(user, _ONE_USE_STATEMENTS):
        return not isinstance(user, func.ReturnOp) or len(user.operands) == 1
    if isinstance(user, kernel.AtomicAddOp | kernel.AtomicRMWOp):
        return uses[0].index == 0  # the value added (an index may be printed twice: private memory)
    if user.name in ("vector.insert", "vector.extract"):
        return not list(user.dynamic_position)  # type: ignore[attr-defined]
    return user.name in EXPRESSIONS and user.name not in _REPEATING


def _load_into_next_store(load: memref.LoadOp) -> bool:
    """Whether a load is printed inside its one use: the next op, a store of the value or a pure
    expression of it that the next op stores (`s[k] = s[k] + v`, accumulate-gradients' private
    sums), so that it is still read where it was, with nothing in between."""
    uses = list(load.res.uses)
    if isinstance(load.res.type, VectorType) or len(uses) != 1:
        return False
    user, index = uses[0].operation, uses[0].index
    if user is not load.next_op:
        return False
    if isinstance(user, memref.StoreOp):
        return index == 0
    if user.name not in EXPRESSIONS or user.name in _REPEATING or len(user.results) != 1:
        return False
    after = list(user.results[0].uses)
    return len(after) == 1 and after[0].operation is user.next_op and isinstance(user.next_op, memref.StoreOp) \
        and after[0].index == 0


def _is_atom(text: str) -> bool:
    """A name or a literal, which needs no parentheses."""
    return text.replace("_", "a").replace(".", "a").isalnum()
