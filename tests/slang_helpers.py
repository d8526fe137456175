"""Shared helpers of the front-end feature tests: compile Slang, run the derivative pipeline,
call functions in the interpreter, and check located diagnostics."""

from __future__ import annotations


import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr

from diffc.compiler import apply_pipeline
from diffc.diagnostics import DiffcError
from diffc.dialects import diff
from diffc.frontend import compile_slang
from diffc.interp import run_function


def front(src: str) -> ModuleOp:
    m = compile_slang(src, "test.slang")
    m.verify()
    diff.verify_function_facts(m)
    return m


def lowered(src: str) -> ModuleOp:
    m = front(src)
    apply_pipeline(m, name_failing_pass=True)
    m.verify()
    return m


def run(src_or_module, name: str, *args):
    m = lowered(src_or_module) if isinstance(src_or_module, str) else src_or_module
    return run_function(m, name, *args)


def funcs(m: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in m.ops if isinstance(op, func.FuncOp)}


def ops_named(op, name: str) -> list:
    return [o for o in op.walk() if o.name == name]


def expect_error(src: str, code: str, line: int, col: int, words: str) -> str:
    """Compiling src fails with a located diagnostic: code at line:col, message containing words,
    the source line and a caret."""
    with pytest.raises(DiffcError) as info:
        compile_slang(src, "bad.slang")
    text = str(info.value)
    head = text.splitlines()[0]
    assert head.startswith(f"bad.slang:{line}:{col}: error[{code}]: "), head
    assert words in head, head
    assert "^" in text.splitlines()[-1]
    return head


def floats(xs) -> ShapedArray:
    """A memref argument holding xs (interpreter floats are float64 whatever the IR type)."""
    return ShapedArray(TypedPtr.new_float64([float(v) for v in xs]), [len(xs)])


def central_difference(f, xs: list[float], i: int, h: float = 1e-6) -> float:
    a, b = list(xs), list(xs)
    a[i] += h
    b[i] -= h
    return (f(*a) - f(*b)) / (2 * h)
