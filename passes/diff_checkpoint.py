"""diff-checkpoint: for each primal value the reverse sweep needs, store it or recompute it.

Contract with diff-rev (see diffc/ad/reverse.py; the marks are declared in dialects/diff.py). diff-rev emits
"recompute everything inside regions, tape the loop-carried values":
  * primal values defined at the top level of the function are used by the reverse sweep
    directly (they live in registers: stored for free);
  * the carried values of every loop are stored per iteration by diff-rev itself (allocas
    marked `diff.tape`), so that the reverse loop can run the iterations backwards;
  * every other primal value the reverse sweep needs inside a branch or a loop body is
    recomputed: the forward op carries `diff.primal_id = K`, each recomputation
    `diff.recompute = K`; loop clones carry `diff.loop = L`, `diff.trip = N`, and the op with
    `diff.iter = L` in each of their blocks is the forward iteration number.
This pass decides, per forward op K, whether its recomputations stay or become loads of a
value stored right after the forward op (`memref.alloca` of `memref<N1 x ... x Nk x T>`, one
dimension per enclosing loop, indexed by the iteration numbers; `memref<1 x T>` outside loops).

Policy (Slang's default, steered by `diff.prefer`): constants and values that cannot be stored
are recomputed; for every other op its derivative rule decides (`DerivativeRule.checkpoint`,
one place per op kind in diffc/ad):
  * cheap arithmetic (the default, any op without a rule of its own): recompute, unless the
    function prefers "checkpoint";
  * results of calls (diffc/ad/rules/func_call.py): store, unless the callee (first) or the
    function prefers "recompute"; a callee's "checkpoint" wins over the function's "recompute";
  * results of loops (diffc/ad/tape.py LoopRule: scf.for, scf.while; recomputed inside an outer
    loop's reverse body): store, unless the function prefers "recompute";
  * results of branches (diffc/ad/branches.py BranchRule: scf.if, scf.index_switch): recompute
    (their contents are decided one by one), unless the function prefers "checkpoint".
A value can only be stored when its recomputation sits in the same loop nest as the forward op
(otherwise it stays recomputed); the nest and the tape slot come from the marks the loop rules
left (diffc.ad.tape.marked_loops). Afterwards every mark of diff-rev is removed.

`diff-checkpoint{report=true}` prints, per function, comment lines on stdout (valid MLIR
comments, so the output still parses):
    // checkpoint @f_bwd: 52 bytes of stored context
    // checkpoint @f_bwd: store memref<3xf32> (12 bytes): loop-carried value
    // checkpoint @f_bwd: store func.call @g -> memref<3xf32> (12 bytes): result of a call to @g
    // checkpoint @f_bwd: recompute arith.mulf: cheap arithmetic
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.ad.interface import DerivativeRule
from diffc.ad.registry import lookup
from diffc.ad.reverse import symbols_of
from diffc.ad.tape import byte_size, marked_loops, storable
from diffc.diagnostics import pass_error
from diffc.dialects import diff
from diffc.dialects.diff import BWD_OF, ITER, LOOP, PRIMAL_ID, RECOMPUTE, TAPE, TRIP

MARKS = (PRIMAL_ID, RECOMPUTE, LOOP, TRIP, ITER, TAPE, BWD_OF)
_DEFAULT_RULE = DerivativeRule()  # (ops without a rule: cheap)


def _int(op: Operation, key: str) -> int | None:
    a = op.attributes.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else None


@dataclass
class _Decision:
    store: bool
    why: str


class _Checkpointer:
    def __init__(self, fn: func.FuncOp, symbols: dict[str, func.FuncOp]):
        self.fn = fn
        self.symbols = symbols
        self.prefer = diff.prefer(fn)
        origin = fn.attributes.get(BWD_OF)
        self.origin = origin.root_reference.data if isinstance(origin, SymbolRefAttr) else fn.sym_name.data
        self.lines: list[str] = []
        self.bytes = 0

    def decide(self, op: Operation) -> _Decision:
        if isinstance(op, arith.ConstantOp):
            return _Decision(False, "constant")
        if not op.results or not all(storable(r.type) for r in op.results):
            return _Decision(False, "not storable")
        # what the op costs to run again is its rule's to say (calls and loops: stored)
        rule = lookup(op) or _DEFAULT_RULE
        return _Decision(*rule.checkpoint(op, self.prefer, self.origin, self.symbols))

    def run(self) -> None:
        fn = self.fn
        entry = fn.body.block
        _prune_dead_recomputations(fn)
        forward: dict[int, Operation] = {}
        recomputed: dict[int, list[Operation]] = {}
        for op in fn.walk():
            k = _int(op, PRIMAL_ID)
            if k is not None:
                forward[k] = op
            k = _int(op, RECOMPUTE)
            if k is not None:
                recomputed.setdefault(k, []).append(op)
        for op in entry.ops:
            if isinstance(op, memref.AllocaOp) and isinstance(op.attributes.get(TAPE), StringAttr):
                t = op.memref.type
                assert isinstance(t, MemRefType)
                n = byte_size(t.element_type) * _count(t)
                self.bytes += n
                self.lines.append(f"store {t} ({n} bytes): {op.attributes[TAPE].data}")  # type: ignore[union-attr]
        erased: set[Operation] = set()
        allocas: list[Operation] = []
        for k in sorted(recomputed):
            f_op = forward.get(k)
            if f_op is None:
                continue
            d = self.decide(f_op)
            what = f_op.name + (f" @{f_op.callee.root_reference.data}" if isinstance(f_op, func.CallOp) else "")
            if not d.store:
                self.lines.append(f"recompute {what}: {d.why}")
                continue
            f_chain = marked_loops(f_op)
            live = [r for r in recomputed[k] if not _inside(r, erased)]
            chains = [marked_loops(r) for r in live]
            ids = None if f_chain is None else [c[0] for c in f_chain]
            if ids is None or any(c is None or [x[0] for x in c] != ids for c in chains):
                self.lines.append(f"recompute {what}: {d.why}, but not in the same loop nest")
                continue
            assert f_chain is not None
            dims = [b for _, b, _ in f_chain] or [1]
            tapes = []
            for r in f_op.results:
                a = memref.AllocaOp.get(r.type, shape=dims)
                allocas.append(a)
                tapes.append(a.results[0])
                n = byte_size(r.type) * _count(a.memref.type)
                self.bytes += n
                self.lines.append(f"store {what} -> {a.memref.type} ({n} bytes): {d.why}")
            # the stores, right after the forward op
            anchor = f_op
            if f_chain:
                idx = [k for _, _, k in f_chain]
            else:
                c = arith.ConstantOp(IntegerAttr(0, IndexType()))
                Rewriter.insert_op(c, InsertPoint.after(anchor))
                anchor, idx = c, [c.results[0]]
            for r, t in zip(f_op.results, tapes):
                st = memref.StoreOp.get(r, t, idx)
                Rewriter.insert_op(st, InsertPoint.after(anchor))
                anchor = st
            # the loads, in place of each recomputation
            for r_op, chain in zip(live, chains):
                assert chain is not None
                ip = InsertPoint.before(r_op)
                ridx = self.indices(chain, ip)
                loads = []
                for t in tapes:
                    ld = memref.LoadOp.get(t, ridx)
                    Rewriter.insert_op(ld, InsertPoint.before(r_op))
                    loads.append(ld.results[0])
                for old, new in zip(r_op.results, loads):
                    old.replace_all_uses_with(new)
                Rewriter.erase_op(r_op)
                erased.add(r_op)
        if allocas:
            entry.insert_ops_before(allocas, entry.first_op)  # type: ignore[arg-type]

    @staticmethod
    def indices(chain, ip: InsertPoint) -> list[SSAValue]:
        if chain:
            return [k for _, _, k in chain]
        c = arith.ConstantOp(IntegerAttr(0, IndexType()))
        Rewriter.insert_op(c, ip)
        return [c.results[0]]


def _prune_dead_recomputations(fn: func.FuncOp) -> None:
    """Erases recomputations whose results nothing uses (the reverse sweep does not need
    them), so that only needed values are stored or recomputed."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(fn.walk())):
            if RECOMPUTE in op.attributes and op.parent is not None and all(not r.uses for r in op.results):
                Rewriter.erase_op(op, safe_erase=False)
                changed = True


def _count(t: MemRefType) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _inside(op: Operation, erased: set[Operation]) -> bool:
    cur: Operation | None = op
    while cur is not None:
        if cur in erased:
            return True
        cur = cur.parent_op()
    return False


@dataclass(frozen=True)
class DiffCheckpointPass(ModulePass):
    """Store-or-recompute decisions for the reverse sweeps diff-rev generated."""

    name = "diff-checkpoint"
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        symbols = symbols_of(op)
        out: list[str] = []
        for fn in list(symbols.values()):
            if BWD_OF not in fn.attributes and not any(RECOMPUTE in o.attributes for o in fn.walk()):
                continue
            problem = diff.tape_contract_problem(fn)
            if problem is not None:
                at, message = problem
                raise pass_error(
                    at, f"in function @{fn.sym_name.data}: the tape marks diff-rev left are broken: {message} "
                    f"(run diff-checkpoint right after diff-rev)"
                )
            cp = _Checkpointer(fn, symbols)
            cp.run()
            name = fn.sym_name.data
            out.append(f"// checkpoint @{name}: {cp.bytes} bytes of stored context")
            out += [f"// checkpoint @{name}: {line}" for line in cp.lines]
        for o in op.walk():
            for key in MARKS:
                if key in o.attributes:
                    del o.attributes[key]
        if self.report and out:
            print("\n".join(out), file=sys.stdout, flush=True)
