"""The diff dialect from Python: builders, signature helpers, verifiers, and a property test
that fwd_diff / bwd_diff built from fwd_signature / bwd_signature verify and round-trip."""

from __future__ import annotations

from io import StringIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.builder import Builder
from xdsl.rewriter import InsertPoint
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from diffc.dialects import diff
from diffc.dialects.diff import (
    AccumulateOp,
    AddOp,
    BwdDiffOp,
    DetachOp,
    DifferentialOp,
    FwdDiffOp,
    MakePairOp,
    MakePtrPairOp,
    PairType,
    PrimalOp,
    PtrGradientOp,
    PtrPairType,
    PtrPrimalOp,
    ZeroOp,
    arg_is_differentiable,
    bwd_signature,
    differential_type,
    fwd_signature,
    is_differentiable_type,
    result_is_differentiable,
    verify_function_facts,
)


def context() -> Context:
    ctx = Context()
    for d in (diff.Diff, func.Func, arith.Arith, scf.Scf):
        ctx.load_dialect(d)
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.memref import MemRef

    ctx.load_dialect(Builtin)
    ctx.load_dialect(MemRef)
    return ctx


def declare(name: str, ins, outs, no_diff_args=(), no_diff_res=(), differentiable=True) -> func.FuncOp:
    f = func.FuncOp.external(name, list(ins), list(outs))
    f.arg_attrs = func.ArrayAttr(
        [DictionaryAttr({diff.NO_DIFF: UnitAttr()} if i in no_diff_args else {}) for i in range(len(ins))]
    )
    f.res_attrs = func.ArrayAttr(
        [DictionaryAttr({diff.NO_DIFF: UnitAttr()} if i in no_diff_res else {}) for i in range(len(outs))]
    )
    if differentiable:
        f.attributes[diff.DIFFERENTIABLE] = UnitAttr()
    return f


def round_trip(module: ModuleOp, generic: bool = False) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    text = out.getvalue()
    again = Parser(context(), text).parse_module()
    again.verify()
    out2 = StringIO()
    Printer(stream=out2, print_generic_format=generic).print_op(again)
    assert out2.getvalue() == text
    return text


# -- types ------------------------------------------------------------------------------------


def test_differentiable_types():
    assert is_differentiable_type(f32) and is_differentiable_type(f64)
    assert is_differentiable_type(VectorType(f32, [4]))
    assert is_differentiable_type(PairType(f32))
    assert not is_differentiable_type(i32)
    assert not is_differentiable_type(IndexType())
    assert not is_differentiable_type(VectorType(i32, [4]))
    assert differential_type(PairType(PairType(f64))) == PairType(PairType(f64))


@pytest.mark.parametrize("t", [i32, IndexType(), VectorType(i32, [2]), MemRefType(f32, [4])])
def test_pair_of_non_differentiable_type_is_refused(t):
    with pytest.raises(VerifyException, match="!diff.pair element type must be differentiable"):
        PairType(t)


@pytest.mark.parametrize("t", [f32, MemRefType(i32, [4])])
def test_ptr_pair_needs_a_memref_of_floats(t):
    with pytest.raises(VerifyException, match="!diff.ptr_pair location must be a memref"):
        PtrPairType(t)


# -- builders ---------------------------------------------------------------------------------


def test_pair_builders_infer_types():
    x = create_ssa_value(VectorType(f32, [4]))
    p = MakePairOp(x, x)
    assert p.result.type == PairType(VectorType(f32, [4]))
    assert PrimalOp(p).result.type == VectorType(f32, [4])
    assert DifferentialOp(p).result.type == VectorType(f32, [4])
    pp = MakePairOp(p, p)
    assert DifferentialOp(pp).result.type == PairType(VectorType(f32, [4]))
    for op in (p, pp, PrimalOp(p), DifferentialOp(pp), DetachOp(x), AddOp(x, x), ZeroOp(f64)):
        op.verify()


def test_make_pair_checks_the_differential():
    x, d = create_ssa_value(f32), create_ssa_value(f64)
    with pytest.raises(VerifyException, match="'diff.make_pair' differential type f64 does not match"):
        MakePairOp(x, d).verify()


def test_add_and_zero_check_types():
    with pytest.raises(VerifyException, match="'diff.add' operands and result must have one type"):
        AddOp(create_ssa_value(f32), create_ssa_value(f64)).verify()
    with pytest.raises(VerifyException, match="'diff.zero' result must be a differentiable type, got i32"):
        ZeroOp(i32).verify()


def test_ptr_pair_builders_and_accumulate():
    mem = MemRefType(f32, [8, 8])
    m, g = create_ssa_value(mem), create_ssa_value(mem)
    pp = MakePtrPairOp(m, g)
    assert pp.result.type == PtrPairType(mem)
    assert PtrPrimalOp(pp).result.type == mem
    assert PtrGradientOp(pp).result.type == mem
    i = create_ssa_value(IndexType())
    AccumulateOp(create_ssa_value(f32), pp, [i, i]).verify()
    with pytest.raises(VerifyException, match="one index per dimension of the gradient location: 2"):
        AccumulateOp(create_ssa_value(f32), pp, [i]).verify()
    with pytest.raises(VerifyException, match="value type f64 does not match the element type f32"):
        AccumulateOp(create_ssa_value(f64), pp, [i, i]).verify()


# -- signatures -------------------------------------------------------------------------------


def test_signatures_follow_no_diff_marks():
    v4 = VectorType(f32, [4])
    f = declare("f", [f32, f32, i32, v4], [f32, f32, i32], no_diff_args={1}, no_diff_res={1})
    assert [arg_is_differentiable(f, i) for i in range(4)] == [True, False, False, True]
    assert [result_is_differentiable(f, i) for i in range(3)] == [True, False, False]
    fwd = fwd_signature(f)
    assert list(fwd.inputs.data) == [PairType(f32), f32, i32, PairType(v4)]
    assert list(fwd.outputs.data) == [PairType(f32), f32, i32]
    bwd = bwd_signature(f)
    assert list(bwd.inputs.data) == [f32, f32, i32, v4, f32]
    assert list(bwd.outputs.data) == [f32, v4]


def test_issue_example_square():
    square = declare("square", [f32, f32], [f32])
    assert bwd_signature(square) == func.FunctionType.from_lists([f32, f32, f32], [f32, f32])


# -- function facts ---------------------------------------------------------------------------


def test_custom_derivative_signature_is_checked():
    f = declare("f", [f32], [f32])
    f.attributes[diff.BWD_DERIVATIVE] = SymbolRefAttr("f_bwd")
    ok = func.FuncOp.external("f_bwd", [f32, f32], [f32])
    verify_function_facts(ModuleOp([f, ok]))
    wrong = func.FuncOp.external("f_bwd", [f32], [f32])
    with pytest.raises(VerifyException, match=r"custom derivative @f_bwd \(diff.bwd_derivative\) has signature"):
        verify_function_facts(ModuleOp([f.clone(), wrong]))
    with pytest.raises(VerifyException, match="names @f_bwd, which does not exist"):
        verify_function_facts(ModuleOp([f.clone()]))


def test_prefer_and_max_iters_are_checked():
    f = declare("f", [f32], [f32])
    f.attributes[diff.PREFER] = StringAttr("recompute")
    verify_function_facts(ModuleOp([f]))
    g = declare("g", [f32], [f32])
    g.attributes[diff.PREFER] = StringAttr("always")
    with pytest.raises(VerifyException, match='diff.prefer must be "recompute" or "checkpoint"'):
        verify_function_facts(ModuleOp([g]))

    c0 = arith.ConstantOp.from_int_and_width(0, IndexType())
    loop = scf.ForOp(c0, c0, c0, [], Region(Block([scf.YieldOp()], arg_types=[IndexType()])))
    loop.attributes[diff.MAX_ITERS] = IntegerAttr(16, i64)
    assert diff.max_iters(loop) == 16
    verify_function_facts(ModuleOp([c0, loop]))
    loop.attributes[diff.MAX_ITERS] = IntegerAttr(0, i64)
    with pytest.raises(VerifyException, match="diff.max_iters must be a positive iteration bound, got 0"):
        verify_function_facts(ModuleOp([c0.clone(), loop.clone()]))


# -- property: derivative calls built from the signatures verify and round-trip -----------------

PARAM_TYPES = [f32, f64, VectorType(f32, [4]), i32, IndexType(), PairType(f32)]


@st.composite
def functions(draw):
    n_in = draw(st.integers(0, 4))
    n_out = draw(st.integers(0, 3))
    ins = [draw(st.sampled_from(PARAM_TYPES)) for _ in range(n_in)]
    outs = [draw(st.sampled_from(PARAM_TYPES)) for _ in range(n_out)]
    no_diff_args = draw(st.sets(st.integers(0, max(n_in - 1, 0)))) if n_in else set()
    no_diff_res = draw(st.sets(st.integers(0, max(n_out - 1, 0)))) if n_out else set()
    return declare("f", ins, outs, no_diff_args, no_diff_res)


@settings(max_examples=40, deadline=None)
@given(functions())
def test_derivative_calls_from_signatures_verify_and_round_trip(f: func.FuncOp):
    fwd, bwd = fwd_signature(f), bwd_signature(f)
    n_diff_args = sum(arg_is_differentiable(f, i) for i in range(len(f.function_type.inputs)))
    assert len(bwd.outputs) == n_diff_args
    caller_ins = list(fwd.inputs.data) + list(bwd.inputs.data)
    caller = func.FuncOp("caller", (caller_ins, []))
    args = caller.body.block.args
    b = Builder(InsertPoint.at_end(caller.body.block))
    b.insert(FwdDiffOp("f", args[: len(fwd.inputs)], fwd.outputs.data))
    b.insert(BwdDiffOp("f", args[len(fwd.inputs) :], bwd.outputs.data))
    b.insert(func.ReturnOp())
    module = ModuleOp([f, caller])
    module.verify()
    # Generic form: xDSL 0.74's custom func.func format drops the arg/res attributes of a
    # declaration (see test_declaration_keeps_no_diff_marks), and with them the no_diff marks.
    text = round_trip(module, generic=True)
    assert '"diff.fwd_diff"(' in text and '"diff.bwd_diff"(' in text
    assert "<{callee = @f}>" in text

    # Dropping one operand breaks the rule, and the verifier says so.
    if len(args) > len(fwd.inputs):
        bad = BwdDiffOp("f", args[len(fwd.inputs) + 1 :], bwd.outputs.data)
        b2 = Builder(InsertPoint.before(caller.body.block.last_op))
        b2.insert(bad)
        with pytest.raises(VerifyException, match="'diff.bwd_diff' of @f expects"):
            module.verify()


@pytest.mark.xfail(reason="xDSL 0.74: func.func declarations lose arg/res attributes in the custom format", strict=True)
def test_declaration_keeps_no_diff_marks():
    f = declare("f", [f32, f32], [f32], no_diff_args={1})
    text = round_trip(ModuleOp([f]))
    assert "diff.no_diff" in text


def test_definition_keeps_no_diff_marks():
    text = "func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> (f32 {diff.no_diff}) {\n  func.return %x : f32\n}\n"
    module = Parser(context(), text).parse_module()
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert [arg_is_differentiable(f, i) for i in range(2)] == [True, False]
    assert not result_is_differentiable(f, 0)
    assert round_trip(module).count("diff.no_diff") == 2
