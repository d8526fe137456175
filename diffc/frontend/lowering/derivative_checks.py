"""Located checks of the lowered IR that the differentiation passes would otherwise report
without a source position: run on the front end's module, before any pass.

* Every function that fwd_diff / bwd_diff reaches (the target, its differentiable callees,
  transitively) is scanned for ops that receive a derivative-carrying value but have no
  derivative rule (a store into a buffer, an atomic add): E0006 at the expression that made
  the op. Which values carry derivatives is the passes' own analysis (diffc.ad.activity), in
  the mode of the derivative that reaches the function.
* Every function whose body is differentiated ([Differentiable], [ForwardDifferentiable],
  [BackwardDifferentiable]: fwd_diff, bwd_diff or the runtime may differentiate it, so both modes
  are checked) is scanned for calls of non-differentiable functions that get a derivative-carrying
  value for a differentiable parameter: E0006 at the call. The same analysis decides: a value
  that carries no derivative (a constant, a detached value, a no_diff parameter's) may pass.
* Every function that bwd_diff reaches must have bounded loops: a `while` without
  [MaxIters(N)] (and a `for` without constant bounds) is E0007 at the loop, also in a
  [ForwardDifferentiable] function that a backward-differentiated one calls.

Ops map back to the source through `spans` (op -> the AST node being lowered when it was
emitted, filled by Lowering.emit).
"""

from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from diffc.ad.activity import Activity
from diffc.ad.registry import lookup
from diffc.ad.tape import LoopRule, tape_bound
from diffc.dialects import diff
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import NOT_DIFFERENTIABLE, UNBOUNDED_LOOP, FrontendError


def check_module(module: ModuleOp, spans: dict[Operation, A.Node],
                 lost: dict[Operation, A.Node] | None = None,
                 differentiated: dict[str, str] | None = None, slang_names: dict[str, str] | None = None) -> None:
    """`differentiated`: IR function -> the Slang name of each function whose body is
    differentiated; `slang_names`: the checker's function keys (A.Call targets) -> Slang names."""
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    for name, caller in (differentiated or {}).items():
        if name in funcs and diff.DIFFERENTIABLE in funcs[name].attributes:
            for kind in (diff.FWD_DERIVATIVE, diff.BWD_DERIVATIVE):
                _BodyActivity(funcs, spans, funcs[name], kind, caller, slang_names or {})
    fwd_roots, bwd_roots = [], []
    for op in module.walk():
        if isinstance(op, diff.FwdDiffOp | diff.BwdDiffOp):
            roots = fwd_roots if isinstance(op, diff.FwdDiffOp) else bwd_roots
            roots.append((op.callee.root_reference.data, op))
    for roots, kind in ((fwd_roots, diff.FWD_DERIVATIVE), (bwd_roots, diff.BWD_DERIVATIVE)):
        for name in _reached(funcs, [n for n, _ in roots], kind):
            _check_lost(_LocatedActivity(funcs, spans, funcs[name], kind), funcs[name], lost or {})
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
        # a loop (by its derivative rule) that reverse mode could not tape (diffc.ad.tape)
        if isinstance(lookup(op), LoopRule) and tape_bound(op) is None:
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


class _LocatedActivity(Activity):
    """The differentiation passes' activity analysis (diffc.ad.activity) on one function, which
    reports where it refuses a derivative-carrying value at the Slang expression that made the op.
    Calls are _BodyActivity's to report; an op made by no expression keeps the pass's error."""

    def __init__(self, funcs: dict[str, func.FuncOp], spans: dict[Operation, A.Node], f: func.FuncOp, kind: str):
        self.spans = spans
        super().__init__(f, funcs, kind=kind, strict=True)

    def op(self, op: Operation) -> None:
        if isinstance(op, diff.FwdDiffOp | diff.BwdDiffOp):
            # the passes turn these into calls of the derivative before differentiating around them
            if any(o in self.varied for o in op.operands):
                for r in op.results:
                    self.mark(r)
            return
        super().op(op)

    def refuse(self, message: str, op: Operation) -> None:
        node = self.spans.get(op)
        if node is None or isinstance(op, func.CallOp):
            return  # (calls: _BodyActivity, which covers every differentiated function)
        raise FrontendError(
            NOT_DIFFERENTIABLE,
            f"{_describe(node, op)} receives a derivative-carrying value in '{self.name}', which is differentiated, "
            f"but has no derivative: wrap the value in detach(...) to drop its derivative",
            node.span[0],
            node.span[1],
        )


class _BodyActivity(_LocatedActivity):
    """The same analysis over a function whose body is differentiated, reporting (E0006) what no
    derivative can pass in either mode: a call of a non-differentiable function that gets a
    derivative-carrying value (the call rule's refusal, diffc.ad.rules.func_call), and such a
    value written through a raw pointer (the memory rule's, diffc.ad.rules.effects), at the Slang
    call or write target. Everything else is left to the other checks and the passes."""

    def __init__(self, funcs: dict[str, func.FuncOp], spans: dict[Operation, A.Node], f: func.FuncOp, kind: str,
                 caller: str, slang_names: dict[str, str]):
        self.caller, self.slang_names = caller, slang_names
        super().__init__(funcs, spans, f, kind)

    def refuse(self, message: str, op: Operation) -> None:
        if isinstance(op, func.CallOp):
            _refuse_call(op, self.spans, self.caller, self.slang_names)
        elif isinstance(op, memref.StoreOp | memref.AtomicRMWOp):
            _refuse_pointer_write(self.spans.get(op), self.caller)


def _refuse_pointer_write(node: A.Node | None, caller: str) -> None:
    """Raw pointers are not differentiable (Slang's rule): the derivative of a value written
    through one would be dropped. (A write to a global buffer is the reached functions' check.)"""
    if isinstance(node, A.Assign):
        targets = [node.target]
    elif isinstance(node, A.Call) and node.kind == "call" and isinstance(getattr(node, "target", None), tuple):
        targets = [a for a, p in zip(node.args, node.target[2]) if p.direction != "in"]  # out arguments
    else:
        return
    for target in targets:
        ptr = _through_pointer(target)
        if ptr is not None:
            what = f"'{ptr.id}'" if isinstance(ptr, A.Name) else f"a {ptr.ty}"
            raise FrontendError(
                NOT_DIFFERENTIABLE,
                f"raw pointers are not differentiable: writing a derivative-carrying value through {what} "
                f"in differentiable '{caller}' would drop its derivative; detach() the value, or hold the "
                "pointer in an IDifferentiablePtrType struct and write the gradient in a custom backward derivative",
                target.span[0],
                target.span[1],
            )


def _through_pointer(e: A.Node) -> A.Expr | None:
    """The pointer expression a write to lvalue e goes through, or None."""
    while isinstance(e, A.Member | A.Index) or (isinstance(e, A.Unary) and e.op == "*"):
        inner = e.operand if isinstance(e, A.Unary) else e.base
        if isinstance(inner.ty, T.Pointer):
            return inner
        e = inner
    return None


def _refuse_call(op: func.CallOp, spans: dict[Operation, A.Node], caller: str, slang_names: dict[str, str]) -> None:
    node = spans.get(op)
    target = getattr(node, "target", None)
    if not isinstance(node, A.Call) or node.kind != "call" or not isinstance(target, tuple):
        return  # not a Slang call of a function (a pass reports it, if it is differentiated)
    callee = slang_names.get(target[0], target[0])
    raise FrontendError(
        NOT_DIFFERENTIABLE,
        f"'{callee}' is not differentiable but gets a derivative-carrying value in differentiable '{caller}': "
        "mark it [Differentiable] or call it with no_diff",
        node.span[0],
        node.span[1],
    )


def _check_lost(act: Activity, f: func.FuncOp, lost: dict[Operation, A.Node]) -> None:
    """A derivative-carrying value assigned to a no_diff field: the front end detached it there
    (diff.detach, recorded in `lost`); Slang's error 41031."""
    for op in f.walk():
        if op in lost and op.operands[0] in act:
            node = lost[op]
            raise FrontendError(
                NOT_DIFFERENTIABLE,
                f"derivative is lost during assignment: '{_target_text(node)}' is a no_diff field, and the "
                f"value assigned to it in '{f.sym_name.data}' carries a derivative (Slang's error 41031); "
                "wrap the value in detach(...) to drop its derivative",
                node.span[0], node.span[1])


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
