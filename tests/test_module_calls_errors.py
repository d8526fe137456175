"""Bad calls raise CallError naming the argument; nothing is launched."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import CallError, RuntimeDiffcError
from diffc.runtime.module import load_module_from_string
from conftest import POLYNOMIAL_IR

SRC = POLYNOMIAL_IR + """
func.func @plain(%x: f32) -> f32 {
  %r = arith.mulf %x, %x : f32
  func.return %r : f32
}
func.func @two(%x: f32) -> (f32, f32) {
  func.return %x, %x : f32, f32
}
"""


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(SRC, "errors.mlir")


def x4():
    return diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32))


def test_unknown_argument(m):
    with pytest.raises(CallError, match="unknown argument 'y'") as info:
        m.polynomial(a=2, b=8, c=-1, x=x4(), y=1)
    assert info.value.argument == "y"


def test_missing_and_duplicate_arguments(m):
    with pytest.raises(CallError, match="missing argument 'c'"):
        m.polynomial(a=2, b=8, x=x4())
    with pytest.raises(CallError, match="'a' twice"):
        m.polynomial(2, 8, -1, x4(), a=3)
    with pytest.raises(CallError, match="takes 4 arguments"):
        m.polynomial(1, 2, 3, 4, 5)


def test_shapes_that_do_not_broadcast(m):
    with pytest.raises(CallError, match="argument 'x' has shape \\(3,\\)") as info:
        m.polynomial(a=2, b=x4(), c=-1, x=diffc.Tensor.zeros((3,)))
    assert info.value.argument == "x"
    with pytest.raises(CallError, match="'_result' has shape"):
        m.polynomial(a=2, b=8, c=-1, x=x4(), _result=diffc.Tensor.zeros((5,)))


def test_wrong_dtype_and_type(m):
    with pytest.raises(CallError, match="argument 'x' is a float64"):
        m.polynomial(a=2, b=8, c=-1, x=diffc.Tensor.zeros((4,), np.float64))
    with pytest.raises(CallError, match="argument 'b' must be a Tensor"):
        m.polynomial(a=2, b="8", c=-1, x=x4())
    with pytest.raises(CallError, match="_result"):
        m.polynomial(a=2, b=8, c=-1, x=x4(), _result="list")


def test_bwds_of_non_differentiable(m):
    r = m.plain(x=x4()).with_grads()
    with pytest.raises(CallError, match="not differentiable"):
        m.plain.bwds(x=x4(), _result=r)
    with pytest.raises(CallError, match="not differentiable"):
        m.plain.fwds(x=x4())


def test_bwds_needs_result_grad(m):
    x = x4().with_grads()
    r = m.polynomial(a=2, b=8, c=-1, x=x)
    with pytest.raises(CallError, match="'_result' has no .grad") as info:
        m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=r)
    assert info.value.argument == "_result"
    with pytest.raises(CallError, match="'_result' must be the result Tensor"):
        m.polynomial.bwds(a=2, b=8, c=-1, x=x)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(4))  # nothing ran


def test_multiple_results_and_unknown_function(m):
    with pytest.raises(CallError, match=r"@two returns \(f32, f32\), which calls over tensors cannot return"):
        m.two(x=x4())
    with pytest.raises(AttributeError, match="no function 'nope'"):
        m.nope


def test_load_module_errors(tmp_path):
    with pytest.raises(RuntimeDiffcError, match="no such file"):
        diffc.load_module(tmp_path / "missing.mlir")
    # a missing file is also what Python's own loaders raise for one
    with pytest.raises(FileNotFoundError, match="no such file: 'nope.slang'") as e:
        diffc.load_module("nope.slang")
    assert e.value.filename == "nope.slang"
    with pytest.raises(FileNotFoundError, match="is a folder, not a file"):
        diffc.load_module(tmp_path)
    import diffc.slangpy as spy

    with pytest.raises(FileNotFoundError, match="no module file 'nope.slang'"):
        spy.Module.load_from_file(spy.create_device(), "nope.slang")
    bad = tmp_path / "f.xyz"
    bad.write_text("")
    with pytest.raises(RuntimeDiffcError, match="unknown extension"):
        diffc.load_module(bad)


def test_result_that_is_an_array_is_a_call_error(tmp_path):
    # `_result=np.array([])` used to reach `result in ("tensor", "numpy")`: numpy's ValueError
    # about the truth value of an empty array.
    f = tmp_path / "p.mlir"
    f.write_text("func.func @sq(%x: f32) -> f32 {\n  %r = arith.mulf %x, %x : f32\n  func.return %r : f32\n}\n")
    m = diffc.load_module(f)
    with pytest.raises(CallError, match=r"'_result' must be \"tensor\", \"numpy\" or a Tensor, got array"):
        m.sq(x=np.ones(3, np.float32), _result=np.array([], np.float16))


COUNT = """
func.func @count(%n: i32, %x: f32) -> f32 {
  %f = arith.sitofp %n : i32 to f32
  %r = arith.mulf %f, %x : f32
  func.return %r : f32
}
"""


@pytest.mark.parametrize("kwargs,message", [
    # numpy's OverflowError from np.int32(2**70) before
    ({"n": 2**70, "x": 1.0}, "argument 'n' = 1180591620717411303424 does not fit in int32"),
    ({"n": np.int64(2**40), "x": 1.0}, "argument 'n' = 1099511627776 does not fit in int32"),
    # these were converted silently: complex lost its imaginary part, floats were truncated
    ({"n": np.ones(3, np.complex64), "x": 1.0}, "argument 'n' has dtype complex64; calls take bool, integer or float data"),
    ({"n": np.ones(3), "x": 1.0}, "argument 'n' is a float64 array, parameter is int32"),
    ({"n": np.array(2.5), "x": 1.0}, "argument 'n' is a float, parameter is int32"),
    ({"n": 3, "x": np.array(["a"])}, "argument 'x' has dtype <U1; calls take bool, integer or float data"),
])
def test_wrong_kind_of_number_is_a_call_error(tmp_path, kwargs, message):
    f = tmp_path / "count.mlir"
    f.write_text(COUNT)
    m = diffc.load_module(f)
    with pytest.raises(CallError) as e:
        m.count(**kwargs, _result="numpy")
    assert message in str(e.value)
    assert m.count(n=np.array([1, 2], np.int32), x=2.0, _result="numpy").tolist() == [2.0, 4.0]


@pytest.mark.parametrize("text, message", [
    ("func.func @f(%x: f32) -> f32 {\n  %y = arith.mulf %x, %x f32\n  func.return %y : f32\n}\n",
     "bad.mlir:2:26: error: Expected ':'"),
    ("func.func @f(%x: f32) -> f64 {\n  %y = arith.mulf %x, %x : f32\n  func.return %y : f32\n}\n",
     "bad.mlir:3:3: error: 'func.return' op Expected arguments to have the same types"),
])
def test_load_module_of_bad_ir_raises_the_runtime_error(tmp_path, text, message):
    # xDSL's ParseError / VerifyException escaped from load_module (and `diffc compile x.mlir`
    # printed a traceback for the ParseError).
    f = tmp_path / "bad.mlir"
    f.write_text(text)
    with pytest.raises(RuntimeDiffcError) as e:
        diffc.load_module(f)
    assert str(e.value).startswith(f"{tmp_path}/{message}"), str(e.value)
