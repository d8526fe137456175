"""Located checks of the lowered IR that the differentiation passes would otherwise report
without a source position: run on the front end's module, before any pass.

* Every function that fwd_diff / bwd_diff reaches (the target, its differentiable callees,
  transitively) is scanned for ops that receive a derivative-carrying value but have no
  derivative rule (a store into a buffer, an atomic add): E0006 at the expression that made
  the op. Which values carry derivatives follows the passes: differentiable parameters, then
  every result of an op with a rule whose operands carry one, through if / for / while.
* Every function that bwd_diff reaches must have bounded loops: a `while` without
  [MaxIters(N)] (and a `for` without constant bounds) is E0007 at the loop, also in a
  [ForwardDifferentiable] function that a backward-differentiated one calls.

Ops map back to the source through `spans` (op -> the AST node being lowered when it was
emitted, filled by Lowering.emit).
"""

from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from diffc.dialects import diff
from diffc.frontend import ast as A
from diffc.frontend.errors import NOT_DIFFERENTIABLE, UNBOUNDED_LOOP, FrontendError
from diffc.rules import lookup_rule

_NO_RULE_NEEDED = (func.ReturnOp, scf.YieldOp, scf.ConditionOp)


def check_module(module: ModuleOp, spans: dict[Operation, A.Node],
                 lost: dict[Operation, A.Node] | None = None) -> None:
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    fwd_roots, bwd_roots = [], []
    for op in module.walk():
        if isinstance(op, diff.FwdDiffOp | diff.BwdDiffOp):
            roots = fwd_roots if isinstance(op, diff.FwdDiffOp) else bwd_roots
            roots.append((op.callee.root_reference.data, op))
    scanned = _reached(funcs, [n for n, _ in fwd_roots], diff.FWD_DERIVATIVE)
    scanned += [n for n in _reached(funcs, [n for n, _ in bwd_roots], diff.BWD_DERIVATIVE) if n not in scanned]
    for name in scanned:
        _Activity(funcs, spans, funcs[name], lost or {}).run()
    for name in _reached(funcs, [n for n, _ in bwd_roots], diff.BWD_DERIVATIVE):
        _check_loops(funcs[name], spans)


def _reached(funcs: dict[str, func.FuncOp], roots: list[str], custom: str) -> list[str]:
    """The functions whose derivatives the passes generate from `roots` in one mode: a function
    with a custom derivative of that mode (attribute `custom`) is neither differentiated nor
    entered."""
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop()
        f = funcs.get(name)
        if name in seen or f is None or diff.custom_derivative(f, custom):
            continue
        seen.append(name)
        for op in f.walk():
            if isinstance(op, func.CallOp):
                callee = funcs.get(op.callee.root_reference.data)
                if callee is not None and diff.DIFFERENTIABLE in callee.attributes:
                    todo.append(callee.sym_name.data)
            elif isinstance(op, diff.FwdDiffOp):
                todo.append(op.callee.root_reference.data)
    return seen


def _check_loops(f: func.FuncOp, spans: dict[Operation, A.Node]) -> None:
    for op in f.walk():
        if isinstance(op, scf.WhileOp | scf.ForOp) and diff.MAX_ITERS not in op.attributes:
            if isinstance(op, scf.ForOp) and all(_is_const(v) for v in (op.lb, op.ub, op.step)):
                continue
            node = spans.get(op)
            if node is None:
                continue
            kw = _loop_keyword(node)
            raise FrontendError(
                UNBOUNDED_LOOP,
                f"'{kw}' loop in '{f.sym_name.data}' has no bound, and bwd_diff differentiates "
                f"'{f.sym_name.data}': add [MaxIters(N)] or use constant bounds",
                node.span[0],
                node.span[0] + len(kw),
            )


def _loop_keyword(node: A.Node) -> str:
    if isinstance(node, A.For):
        return "for"
    if isinstance(node, A.While):
        return "do-while" if node.do_while else "while"
    return "loop"


def _is_const(v: SSAValue) -> bool:
    return isinstance(v.owner, Operation) and v.owner.name == "arith.constant"


class _Activity:
    """Which values of one function carry derivatives; refuses an op without a rule that
    receives one."""

    def __init__(self, funcs: dict[str, func.FuncOp], spans: dict[Operation, A.Node], f: func.FuncOp,
                 lost: dict[Operation, A.Node]):
        self.funcs, self.spans, self.f, self.lost = funcs, spans, f, lost
        self.active: set[SSAValue] = set()

    def run(self) -> None:
        block = self.f.body.blocks[0]
        for i, a in enumerate(block.args):
            if diff.arg_is_differentiable(self.f, i):
                self.active.add(a)
        self.block(block)

    def mark(self, v: SSAValue) -> bool:
        """Marks v (a differentiable-typed value); True when it was not marked before."""
        if v in self.active or not diff.is_differentiable_type(v.type):
            return False
        self.active.add(v)
        return True

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        act = self.active
        if isinstance(op, scf.IfOp):
            for region in op.regions:
                for blk in region.blocks:
                    self.block(blk)
                    self._from_terminator(blk, list(op.results))
            return
        if isinstance(op, scf.ForOp):
            body = op.body.blocks[0]
            args = list(body.args[1:])
            for a, x in zip(args, op.iter_args):
                if x in act:
                    self.mark(a)
            self._fixpoint(lambda: self._loop_round(body, args, op))
            return
        if isinstance(op, scf.WhileOp):
            before, after = op.before_region.blocks[0], op.after_region.blocks[0]
            for a, x in zip(before.args, op.arguments):
                if x in act:
                    self.mark(a)
            self._fixpoint(lambda: self._while_round(before, after, op))
            return
        if isinstance(op, diff.DetachOp):
            if op in self.lost and op.operands[0] in act:
                node = self.lost[op]
                raise FrontendError(
                    NOT_DIFFERENTIABLE,
                    f"derivative is lost during assignment: '{_target_text(node)}' is a no_diff field, and the "
                    f"value assigned to it in '{self.f.sym_name.data}' carries a derivative (Slang's error 41031); "
                    "wrap the value in detach(...) to drop its derivative",
                    node.span[0], node.span[1])
            return
        ins = [x for x in op.operands if x in act]
        if not ins:
            return
        if isinstance(op, func.CallOp):
            callee = self.funcs.get(op.callee.root_reference.data)
            if callee is not None and (diff.DIFFERENTIABLE in callee.attributes):
                for i, r in enumerate(op.results):
                    if diff.result_is_differentiable(callee, i):
                        self.mark(r)
            return
        if op.dialect_name() == "diff":
            for r in op.results:
                self.mark(r)
            return
        if isinstance(op, _NO_RULE_NEEDED):
            return
        rule = lookup_rule(op)
        if rule is None:
            self.refuse(op)
            return
        if rule.differentiable:
            for r in op.results:
                self.mark(r)

    def _from_terminator(self, blk: Block, results: list[SSAValue]) -> bool:
        changed = False
        term = blk.last_op
        if term is None:
            return False
        ops = list(term.operands)
        if isinstance(term, scf.ConditionOp):
            ops = ops[1:]
        for r, y in zip(results, ops):
            if y in self.active:
                changed |= self.mark(r)
        return changed

    def _fixpoint(self, round_fn) -> None:
        while round_fn():
            pass

    def _loop_round(self, body: Block, args: list[SSAValue], op: scf.ForOp) -> bool:
        before = len(self.active)
        self.block(body)
        self._from_terminator(body, args)
        self._from_terminator(body, list(op.results))
        return len(self.active) != before

    def _while_round(self, before: Block, after: Block, op: scf.WhileOp) -> bool:
        n = len(self.active)
        self.block(before)
        self._from_terminator(before, list(after.args))
        self._from_terminator(before, list(op.results))
        self.block(after)
        self._from_terminator(after, list(before.args))
        return len(self.active) != n

    def refuse(self, op: Operation) -> None:
        node = self.spans.get(op)
        fname = self.f.sym_name.data
        if node is None:  # not from the source: leave the pass's own error
            return
        what = _describe(node, op)
        raise FrontendError(
            NOT_DIFFERENTIABLE,
            f"{what} receives a derivative-carrying value in '{fname}', which is differentiated, "
            f"but has no derivative: wrap the value in detach(...) to drop its derivative",
            node.span[0],
            node.span[1],
        )


def _target_text(node: A.Node) -> str:
    parts = []
    while isinstance(node, A.Member):
        parts.append(node.name)
        node = node.base
    if isinstance(node, A.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _describe(node: A.Node, op: Operation) -> str:
    if isinstance(node, A.Call) and node.kind == "builtin":
        return f"builtin '{node.target[0]}'"
    if isinstance(node, A.Assign):
        t = node.target
        while isinstance(t, A.Member | A.Index):
            t = t.base
        name = t.id if isinstance(t, A.Name) else "a buffer"
        return f"the write to buffer '{name}'" if op.name.startswith("memref.") else f"'{op.name}'"
    return f"'{op.name}'"
