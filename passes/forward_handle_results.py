"""forward-handle-results: a function result that is a buffer handle (a memref) and always the
handle it was given becomes no result; its callers use the handle they passed.

A `[mutating]` method returns its `this` (Slang's inout), so a struct that holds a buffer or a
pointer (`RWStructuredBuffer<float> d;`, `float* d;`) returns the buffer's memref from its `set`
accessors and other mutating methods. OpenCL C cannot return a `__global` pointer, but such a
method cannot change which buffer it holds either (no Slang code assigns one buffer field from
another inside it except by passing it through), so the result is the parameter itself: every
call's result is replaced by the operand, and the result is dropped from the function, its
returns and its calls. Repeated until nothing changes (a mutating method calling another one
returns its callee's result, which the first round turns into its own parameter). Branches and
loops that carried the handle on (an `scf.if` whose branches both yield the handle from outside, an
`scf.for` whose body yields its own iteration value) drop it the same way. A memref result that is
not always one parameter is left alone (the emitter reports it, located), and so is a function
tied to a user-given derivative (its signature must stay the derivative's). The pipeline runs it
before differentiation (a loop carrying a handle would need a tape of handles) and after it (the
generated derivatives of mutating methods return handles too).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp, SymbolRefAttr
from xdsl.ir import BlockArgument
from xdsl.passes import ModulePass

from diffc.dialects.diff import BWD_DERIVATIVE, FWD_DERIVATIVE


def _forwarded(fn: func.FuncOp) -> dict[int, int]:
    """result index -> the parameter index every return of `fn` gives back there (memrefs only)."""
    if not fn.body.blocks or not any(isinstance(t, MemRefType) for t in fn.function_type.outputs.data):
        return {}
    rets = [op for op in fn.walk() if isinstance(op, func.ReturnOp)]
    out: dict[int, int] = {}
    for k, t in enumerate(fn.function_type.outputs.data):
        if not isinstance(t, MemRefType) or not rets:
            continue
        args = {r.arguments[k] for r in rets}
        if len(args) == 1:
            a = args.pop()
            if isinstance(a, BlockArgument) and a.block is fn.body.blocks[0]:
                out[k] = a.index
    return out


def _drop_results(fn: func.FuncOp, calls: list[func.CallOp], drop: dict[int, int]) -> None:
    for r in [op for op in fn.walk() if isinstance(op, func.ReturnOp)]:
        r.operands = [v for k, v in enumerate(r.arguments) if k not in drop]
    outs = [t for k, t in enumerate(fn.function_type.outputs.data) if k not in drop]
    fn.function_type = FunctionType.from_lists(fn.function_type.inputs.data, outs)
    if fn.res_attrs is not None:
        fn.res_attrs = type(fn.res_attrs)([a for k, a in enumerate(fn.res_attrs.data) if k not in drop])
    for call in calls:
        for k, j in drop.items():
            call.results[k].replace_all_uses_with(call.arguments[j])
        new = func.CallOp(call.callee, list(call.arguments), outs)
        new.attributes.update(call.attributes)
        _replace(call, new, [r for k, r in enumerate(call.results) if k not in drop])


def _outside(v, op) -> bool:
    """Whether value v is defined outside op (so op's regions may not redefine it)."""
    owner = v.owner if not isinstance(v, BlockArgument) else v.block.parent_op()
    while owner is not None:
        if owner is op:
            return False
        owner = owner.parent_op()
    return True


def _drop_if_results(op: scf.IfOp) -> bool:
    """An scf.if result that is a memref both branches yield unchanged from outside."""
    yields = [r.block.last_op for r in (op.true_region, op.false_region) if r.blocks]
    if len(yields) != 2:
        return False
    drop = {k: yields[0].operands[k] for k, r in enumerate(op.results) if isinstance(r.type, MemRefType)
            and yields[0].operands[k] is yields[1].operands[k] and _outside(yields[0].operands[k], op)}
    if not drop:
        return False
    for k, v in drop.items():
        op.results[k].replace_all_uses_with(v)
    for y in yields:
        y.operands = [v for k, v in enumerate(y.operands) if k not in drop]
    kept = [r for k, r in enumerate(op.results) if k not in drop]
    then, other = op.true_region, op.false_region
    op.detach_region(then)
    op.detach_region(other)
    new = scf.IfOp(op.cond, [r.type for r in kept], then, other)
    new.attributes.update(op.attributes)
    _replace(op, new, kept)
    return True


def _drop_for_results(op: scf.ForOp) -> bool:
    """An scf.for iteration value that is a memref the body yields unchanged (its own block argument)."""
    body = op.body.block
    y = body.last_op
    args = body.args[1:]
    drop = {k for k, a in enumerate(args) if isinstance(a.type, MemRefType) and y.operands[k] is a}
    if not drop:
        return False
    for k in drop:
        args[k].replace_all_uses_with(op.iter_args[k])
        op.results[k].replace_all_uses_with(op.iter_args[k])
    y.operands = [v for k, v in enumerate(y.operands) if k not in drop]
    for k in sorted(drop, reverse=True):
        body.erase_arg(args[k])
    kept = [r for k, r in enumerate(op.results) if k not in drop]
    new = scf.ForOp(op.lb, op.ub, op.step, [v for k, v in enumerate(op.iter_args) if k not in drop],
                    op.detach_region(op.body))
    new.attributes.update(op.attributes)
    _replace(op, new, kept)
    return True


def _replace(old, new, kept) -> None:
    """`new` in old's place, its results for `kept` (old's results that stay)."""
    for r, n in zip(kept, new.results):
        r.replace_all_uses_with(n)
    parent = old.parent_block()
    assert parent is not None
    parent.insert_op_before(new, old)
    old.detach()
    old.erase()


def forward_handle_results(module: ModuleOp) -> bool:
    """Drops every forwarded memref result (see the module docstring); True if any went."""
    changed_any = False
    changed = True
    while changed:
        changed = False
        # one walk: the functions, their calls, and the branches and loops that could carry a handle
        funcs: dict[str, func.FuncOp] = {}
        calls: dict[str, list[func.CallOp]] = {}
        carriers: list[scf.IfOp | scf.ForOp] = []
        for op in module.walk():
            if isinstance(op, func.CallOp):
                calls.setdefault(op.callee.root_reference.data, []).append(op)
            elif isinstance(op, scf.IfOp | scf.ForOp):
                if any(isinstance(r.type, MemRefType) for r in op.results):
                    carriers.append(op)
            elif isinstance(op, func.FuncOp):
                funcs[op.sym_name.data] = op
        # a function with a user-given derivative, or that is one, keeps the signature the pair shares
        tied = {a.root_reference.data for fn in funcs.values() for k in (FWD_DERIVATIVE, BWD_DERIVATIVE)
                if isinstance(a := fn.attributes.get(k), SymbolRefAttr)}
        tied |= {n for n, fn in funcs.items() if FWD_DERIVATIVE in fn.attributes or BWD_DERIVATIVE in fn.attributes}
        for name, fn in funcs.items():
            drop = _forwarded(fn) if name not in tied else {}
            if drop:
                _drop_results(fn, calls.get(name, []), drop)
                changed = changed_any = True
        # innermost first: an inner op's results are what an outer one yields
        # (dropping function results replaces calls only, never these)
        for op in reversed(carriers):
            if isinstance(op, scf.IfOp) and _drop_if_results(op) or isinstance(op, scf.ForOp) and _drop_for_results(op):
                changed = changed_any = True
    return changed_any


class ForwardHandleResultsPass(ModulePass):
    name = "forward-handle-results"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        forward_handle_results(op)
