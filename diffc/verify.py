"""Verification of a whole module that names the op at fault and where it was written:
xDSL's verifier plus what it does not check and every pass assumes (values defined above their
use and inside the region that uses it, blocks that end in a terminator, yields whose types
match their op), and diffc's own function facts (`verify_op_facts`)."""

from __future__ import annotations

import os
from io import StringIO

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, UnregisteredOp
from xdsl.ir import BlockArgument, Operation, OpResult
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoTerminator
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from diffc.diagnostics import format_diagnostic, op_location
from diffc.dialects.diff import verify_op_facts


def verify_located(module: ModuleOp, sources: dict[str, str], after: str | None = None) -> None:
    """Verifies op by op so that a failure names the op and where it was written; `after`
    names the pass that produced the IR, if any."""
    problem = _dominance_problem(module)  # first: some verifiers crash on values used out of scope
    if problem is not None:
        op, message = problem
        if after is not None:
            message += f" (in the IR left by pass '{after}')"
        raise VerifyException(_located_message(op, message, sources))
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            verify_op_facts(op)
        except DiagnosticException as e:
            cause = e.__cause__ if isinstance(e.__cause__, Exception) else e
            message = str(cause).removeprefix("Operation does not verify: ")
            if after is not None:
                message += f" (in the IR left by pass '{after}')"
            raise VerifyException(_located_message(op, message, sources)) from None
        except Exception as e:  # a verifier that crashes on malformed IR
            if os.environ.get("DIFFC_TRACEBACK"):
                raise
            message = f"cannot be verified ({type(e).__name__}: {e})"
            raise VerifyException(_located_message(op, message, sources)) from None


def _yield_problem(op: Operation) -> tuple[Operation, str] | None:
    """An scf region whose terminator passes other types than the op expects (xDSL's scf
    verifiers let an scf.if with results end in an empty implicit scf.yield)."""
    expected: list[tuple[Operation, list]] = []
    if isinstance(op, scf.IfOp):
        expected = [(r.block.last_op, list(op.result_types)) for r in op.regions if r.blocks]
    elif isinstance(op, scf.ForOp):
        expected = [(op.body.block.last_op, [a.type for a in op.iter_args])]
    elif isinstance(op, scf.WhileOp):
        cond = op.before_region.block.last_op
        expected = [(op.after_region.block.last_op, [a.type for a in op.before_region.block.args])]
        if isinstance(cond, scf.ConditionOp):
            expected.append((cond, list(op.result_types)))
    for term, types in expected:
        if term is None:
            continue
        got = [v.type for v in (term.args if isinstance(term, scf.ConditionOp) else term.operands)]
        if got != types:
            where = term if op_location(term) is not None else op  # (an implicit scf.yield has no place)
            return where, (f"'{term.name}' passes ({', '.join(map(str, got))}) where '{op.name}' expects "
                           f"({', '.join(map(str, types))})")
    return None


def _terminator_hint(op: Operation) -> str:
    return {"scf.if": "scf.yield", "scf.for": "scf.yield", "scf.while": "scf.condition / scf.yield",
            "func.func": "func.return"}.get(op.name, "a terminator op")


def _dominance_problem(module: ModuleOp) -> tuple[Operation, str] | None:
    """The first block without a terminator, or op that uses a value not defined above it in its
    block or an enclosing one (xDSL's verifier checks neither, and every pass assumes both). In the module body, a
    graph region, only the enclosing is checked; values flowing between blocks of one region
    (CFG dominance) are not checked."""
    position: dict[Operation, int] = {}
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for k, o in enumerate(block.ops):
                    position[o] = k
    for op in module.walk():
        graph = isinstance(op.parent_op(), ModuleOp)  # the module body is a graph region: any order
        for v in op.operands:
            name = f"%{v.name_hint}" if v.name_hint else "a value"
            if isinstance(v, OpResult):
                block, at = v.op.parent_block(), position.get(v.op, -1)
            elif isinstance(v, BlockArgument):
                block, at = v.block, -1
            else:
                return op, f"uses {name}, which is never defined"
            cur: Operation | None = op
            while cur is not None and cur.parent_block() is not block:
                if block is not None and cur.parent_region() is block.parent:
                    break  # another block of the defining region: not checked
                cur = cur.parent_op()
            if cur is None:
                return op, f"uses {name} outside the region that defines it"
            if cur.parent_block() is block and position.get(cur, -1) <= at and not graph:
                return op, f"uses {name} before its definition"
    for op in module.walk():
        if op.regions and not op.has_trait(NoTerminator) and not isinstance(op, UnregisteredOp):
            for region in op.regions:
                for block in region.blocks:
                    last = block.last_op
                    if last is None or not last.has_trait(IsTerminator):
                        where = last if last is not None else op
                        return where, f"ends a block of '{op.name}' without a terminator ({_terminator_hint(op)})"
            problem = _yield_problem(op)
            if problem is not None:
                return problem
    return None


def _located_message(op: Operation, message: str, sources: dict[str, str]) -> str:
    if not message.startswith(f"'{op.name}'"):
        message = f"'{op.name}' op {message}"
    loc = op_location(op)
    if loc is None:
        return format_diagnostic(None, message) + f"\n    in: {_short(op)}"
    return format_diagnostic(loc, message, source=sources.get(loc.file))


def _short(op: Operation) -> str:
    out = StringIO()
    try:
        Printer(stream=out).print_op(op.clone_without_regions() if op.regions else op)
    except Exception:  # some ops (builtin.module) cannot print without their region
        return op.name
    return out.getvalue().splitlines()[0]
