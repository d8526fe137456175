"""The tape contract between diff-rev and diff-checkpoint is IR declared by the diff dialect
(dialects/diff.py: the marks, their value kinds, tape_contract_problem): IR that breaks it, as a
pass run between the two might, fails loudly instead of losing stores or recomputations."""

from __future__ import annotations

import pytest
from conftest import run_pipeline, with_bwd_main
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.utils.exceptions import PassFailedException, VerifyException

from diffc.compiler import make_context
from diffc.dialects import diff
from diffc.passes.diff_checkpoint import DiffCheckpointPass

LOOP = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%a = %x) -> (f32) {
    %m = arith.mulf %a, %y : f32
    %s = math.sin %m : f32
    scf.yield %s : f32
  }
  func.return %r : f32
}
"""


def _after_rev():
    module = run_pipeline(with_bwd_main(LOOP), "diff-rev")
    fn = next(o for o in module.walk() if o.name == "func.func" and o.sym_name.data == "f_bwd")
    return module, fn


def test_diff_rev_output_keeps_the_contract():
    module, fn = _after_rev()
    assert diff.tape_contract_problem(fn) is None
    for op in module.walk():
        diff.verify_op_facts(op)
    DiffCheckpointPass().apply(make_context(), module)
    assert not any(k.startswith("diff.") and k != "diff.differentiable" for o in module.walk() for k in o.attributes)


def test_a_removed_forward_op_is_an_error():
    module, fn = _after_rev()
    fwd = next(o for o in fn.walk() if diff.PRIMAL_ID in o.attributes)
    del fwd.attributes[diff.PRIMAL_ID]  # as a pass that rebuilt the op without its marks would
    with pytest.raises(PassFailedException, match=r"@f_bwd: the tape marks diff-rev left are broken: "
                                                  r"diff.recompute = \d+ has no op with diff.primal_id"):
        DiffCheckpointPass().apply(make_context(), module)


def test_a_duplicated_forward_op_is_an_error():
    module, fn = _after_rev()
    fwd = next(o for o in fn.walk() if diff.PRIMAL_ID in o.attributes)
    fwd.parent_block().insert_op_after(fwd.clone(), fwd)  # as loop unrolling would
    with pytest.raises(PassFailedException, match="appears twice"):
        DiffCheckpointPass().apply(make_context(), module)


def test_a_loop_clone_without_its_bound_is_an_error():
    module, fn = _after_rev()
    loop = next(o for o in fn.walk() if diff.LOOP in o.attributes)
    del loop.attributes[diff.TRIP]
    with pytest.raises(PassFailedException, match="has diff.loop but no diff.trip"):
        DiffCheckpointPass().apply(make_context(), module)


def test_an_iteration_number_outside_its_loop_is_an_error():
    module, fn = _after_rev()
    it = next(o for o in fn.walk() if diff.ITER in o.attributes)
    it.attributes[diff.ITER] = IntegerAttr(999, 64)
    with pytest.raises(PassFailedException, match="diff.iter = 999 outside a clone of loop 999"):
        DiffCheckpointPass().apply(make_context(), module)


@pytest.mark.parametrize("key, value", [(diff.PRIMAL_ID, StringAttr("a")), (diff.TAPE, IntegerAttr(1, 64))])
def test_mark_values_of_the_wrong_kind_fail_verification(key, value):
    module, fn = _after_rev()
    op = next(o for o in fn.walk() if o.name == "arith.constant")
    op.attributes[key] = value
    with pytest.raises(VerifyException, match=f"{key} must be"):
        diff.verify_op_facts(op)
