"""Kernel parameter roles are IR data (`diff.abi`, dialects/abi.py), not a naming convention:
the front end records a pointer's memref/offset pair where it splits the pointer, lower-entry-
points and the passes that add kernel parameters record the rest, and verification refuses roles
that no longer fit the parameters (a pass that dropped, moved or added one without its role).
Binding follows the roles whatever the parameters are called."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, MemRefType, f32
from xdsl.utils.exceptions import PassFailedException, VerifyException

import diffc
from diffc.diagnostics import DiffcError
from diffc.runtime.errors import CallError
from diffc.compiler import lower_entry_points, parse_ir, parse_source
from diffc.dialects.abi import ABI, AbiRoleAttr, abi_problem
from diffc.dialects.diff import verify_op_facts
from diffc.kernel_support.kernel_params import append_params
from diffc.passes.lower_entry_points import kernel_params
from diffc.runtime.module import load_module_from_string

SLANG = """
struct Net { float* w; float bias; };
[shader("compute")] [numthreads(4, 1, 1)]
void affine(uint tid : SV_DispatchThreadID, Net net, float* src, float* p_off, uint count) {
    if (tid < count) p_off[tid] = net.w[tid] * src[tid] + net.bias;
}
"""


def _kernel(module, name: str) -> func.FuncOp:
    return next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)


def _lowered_slang() -> func.FuncOp:
    module = parse_source(SLANG, "roles.slang")
    lower_entry_points(module, "affine", reduce_atomics=False)
    return _kernel(module, "affine")


def test_front_end_records_pointer_pairs_by_role():
    k = _lowered_slang()
    got = [(p.name, p.role) for p in kernel_params(k)]
    # `p_off` is a pointer of its own; its offset is named p_off_off: the name of one
    # parameter never decides the role of another
    assert got == [("net_w", "pointer"), ("net_w_off", "offset"), ("net_bias", "value"),
                   ("src", "pointer"), ("src_off", "offset"), ("p_off", "pointer"), ("p_off_off", "offset"),
                   ("count", "value")]
    # renaming every parameter (the name hints the old rule read) leaves the roles as they are
    for i, a in enumerate(k.body.block.args):
        a.name_hint = ["p", "p_off", "x_off", "q", "q_off", "r", "r_off", "s"][i]
    assert [p.role for p in kernel_params(k)] == [r for _, r in got]


def test_slang_pointer_named_like_an_offset_binds():
    m = load_module_from_string(SLANG, "roles.slang")
    w = diffc.Tensor.from_numpy(np.arange(8, dtype=np.float32))
    src = diffc.Tensor.from_numpy(np.full(6, 2.0, np.float32))
    out = diffc.Tensor.zeros(6)
    m.affine.dispatch(thread_count=4, net={"w": w.at(4), "bias": 0.5}, src=src, p_off=out.at(2), count=3)
    want = np.zeros(6, np.float32)
    want[2:5] = np.arange(4, 7, dtype=np.float32) * 2 + 0.5
    np.testing.assert_array_equal(out.to_numpy(), want)


# Hand-written entry points: the names say the opposite of the roles.
IR = """
func.func @fill(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"},
                %p: memref<?xf32>, %p_off: index,
                %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %start: index {diff.abi = #diff.abi<offset of "dst">})
    attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 2, 1, 1>} {
  %i = arith.index_cast %tid : i32 to index
  %a = arith.addi %p_off, %i : index
  %v = memref.load %p[%a] : memref<?xf32>
  %b = arith.addi %start, %i : index
  memref.store %v, %dst[%b] : memref<?xf32>
  func.return
}
"""


def test_hand_written_roles_win_over_names():
    # %p is a buffer and %p_off a plain index value (no role: lower-entry-points gives the plain
    # ones); %dst's offset is %start. The old rule paired p/p_off and left dst a buffer.
    m = load_module_from_string(IR, "k.mlir")
    src = diffc.Tensor.from_numpy(np.arange(10, dtype=np.float32))
    out = diffc.Tensor.zeros(5)
    m.fill.dispatch(thread_count=2, p=src, p_off=7, dst=out.at(3))
    np.testing.assert_array_equal(out.to_numpy(), [0, 0, 0, 7, 8])
    with pytest.raises(CallError, match="'p' is a buffer without an offset"):
        m.fill.dispatch(thread_count=2, p=src.at(1), p_off=7, dst=out)
    module = parse_ir(IR, "k.mlir")
    lower_entry_points(module, "fill", reduce_atomics=False)
    assert [(p.name, p.role) for p in kernel_params(_kernel(module, "fill"))] == [
        ("p", "buffer"), ("p_off", "value"), ("dst", "pointer"), ("start", "offset")]


def _problem_after(edit) -> str:
    module = parse_source(SLANG, "roles.slang")
    lower_entry_points(module, "affine", reduce_atomics=False)
    k = _kernel(module, "affine")
    assert abi_problem(k) is None
    edit(k)
    problem = abi_problem(k)
    assert problem is not None
    with pytest.raises(VerifyException, match="kernel ABI") as info:
        verify_op_facts(k)
    with pytest.raises(PassFailedException, match="kernel ABI"):
        kernel_params(k)  # the runtime never binds by roles that do not fit
    return str(info.value)


def _drop_param(k: func.FuncOp, i: int) -> None:
    """What a careless pass does: the argument and its attributes go, the rest shifts."""
    attrs = list(k.arg_attrs.data)
    del attrs[i]
    k.body.block.erase_arg(k.body.block.args[i], safe_erase=False)
    from xdsl.dialects.builtin import ArrayAttr

    k.arg_attrs = ArrayAttr(attrs)
    k.update_function_type()


def test_dropped_offset_fails_verification():
    message = _problem_after(lambda k: _drop_param(k, 4))  # src_off
    assert 'pointer "src", but its offset does not follow it' in message


def test_moved_parameter_fails_verification():
    def swap_types(k):
        # the attributes stay, the parameters move: net_w's role now sits on an index
        from xdsl.dialects.builtin import ArrayAttr

        attrs = list(k.arg_attrs.data)
        attrs[0], attrs[1] = attrs[1], attrs[0]
        k.arg_attrs = ArrayAttr(attrs)

    message = _problem_after(swap_types)
    assert "parameter 0 (memref<?xf32>) has role offset, which needs an index" in message


def test_added_parameter_without_role_fails_verification():
    def add(k):
        k.body.block.insert_arg(f32, len(k.body.block.args))
        from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

        k.arg_attrs = ArrayAttr([*k.arg_attrs.data, DictionaryAttr({})])
        k.update_function_type()

    message = _problem_after(add)
    assert "parameter 8 (f32) of a kernel has no diff.abi role" in message


def test_passes_record_the_roles_of_what_they_add():
    k = _lowered_slang()
    append_params(k, [(IndexType(), "n_extra"), (MemRefType(f32, [-1]), "status")])
    assert abi_problem(k) is None
    assert [p.role for p in kernel_params(k)][-2:] == ["value", "buffer"]


def test_malformed_roles_are_refused():
    bad_role = IR.replace('#diff.abi<pointer of "dst">', '#diff.abi<pointr of "dst">')
    with pytest.raises(Exception, match="role must be one of pointer, offset, buffer, value"):
        parse_source(bad_role, "k.mlir")
    no_pointer = IR.replace('#diff.abi<offset of "dst">', "#diff.abi<offset>")
    with pytest.raises(Exception, match="needs the name of what it belongs to"):
        parse_source(no_pointer, "k.mlir")
    # a check's length is an index, its status buffer a memref, and each says what it is of
    length_of_memref = IR.replace('#diff.abi<pointer of "dst">', '#diff.abi<length of "p">')
    with pytest.raises(DiffcError, match="parameter 3 .* has role length, which needs an index"):
        parse_source(length_of_memref, "k.mlir")
    with pytest.raises(Exception, match="status> needs the name of what it belongs to"):
        parse_source(IR.replace('#diff.abi<offset of "dst">', "#diff.abi<status>"), "k.mlir")
    other_pair = IR.replace('#diff.abi<offset of "dst">', '#diff.abi<offset of "src">')
    with pytest.raises(DiffcError, match='k.mlir:2:1: .*@fill: kernel ABI: parameter 3 .* is pointer "dst", but its offset does not follow it'):
        parse_source(other_pair, "k.mlir")  # verified, located at the function
    # the printed form is the one parsed above, under the argument attribute diff.abi
    assert str(AbiRoleAttr("offset", "p")) == '#diff.abi<offset of "p">' and str(AbiRoleAttr("value")) == "#diff.abi<value>"
    assert ABI == "diff.abi"
