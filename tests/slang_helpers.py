"""Shared helpers of the front-end feature tests: compile Slang, run the derivative pipeline,
call functions in the interpreter, and check located diagnostics."""

from __future__ import annotations

from math import prod
from typing import Any

import pytest
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.interpreters.builtin import xtype_for_el_type
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr

from diffc.cli import PIPELINE, _apply
from diffc.diagnostics import DiffcError
from diffc.dialects import diff
from diffc.frontend import compile_slang
from diffc.interp import run_function


@register_impls
class StackAllocations(InterpreterFunctions):
    """memref.alloca (diff-rev's tapes) as a fresh zeroed array, like xDSL's memref.alloc."""

    @impl(memref.AllocaOp)
    def run_alloca(self, interp: Interpreter, op: memref.AllocaOp, args: PythonValues):
        t = op.memref.type
        xtype = xtype_for_el_type(t.get_element_type(), interp.index_bitwidth)
        shape = list(t.get_shape())
        return (ShapedArray(TypedPtr[Any].zeros(prod(shape), xtype=xtype), shape),)


def front(src: str) -> ModuleOp:
    m = compile_slang(src, "test.slang")
    m.verify()
    diff.verify_function_facts(m)
    return m


def lowered(src: str) -> ModuleOp:
    m = front(src)
    _apply(m, PIPELINE)
    m.verify()
    return m


def run(src_or_module, name: str, *args, extra=()):
    m = lowered(src_or_module) if isinstance(src_or_module, str) else src_or_module
    return run_function(m, name, *args, extra=[StackAllocations(), *extra])


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
