"""diffc.xdsl_adapter is the only module that uses xDSL internals; this fails, naming the
internal, when an xDSL upgrade removes or reshapes one of them."""

from __future__ import annotations

import inspect

import pytest
from xdsl.dialects.arith import Arith
from xdsl.interpreter import Interpreter
from xdsl.parser import Parser

from diffc import xdsl_adapter


@pytest.mark.parametrize(
    "owner, name",
    [(owner, name) for owner, names in xdsl_adapter.PRIVATE_NAMES.items() for name in names],
)
def test_private_name_exists(owner, name):
    if owner is Parser and name == "_current_token":
        assert isinstance(inspect.getattr_static(Parser, name), property), name
    elif owner is xdsl_adapter.Dialect:
        assert isinstance(getattr(Arith, name), list), name
    else:
        assert callable(getattr(owner, name)), name


def test_private_signatures_are_the_ones_overridden():
    params = list(inspect.signature(Parser._parse_dialect_type_or_attribute_body).parameters)
    assert params == ["self", "attr_name", "is_type", "is_opaque", "starting_opaque_pos"]
    assert list(inspect.signature(Parser._parse_block).parameters) == ["self"]
    assert list(inspect.signature(Interpreter._run_op).parameters) == ["self", "op", "inputs"]


def test_arith_carries_remf():
    import diffc.registry  # noqa: F401  (adds arith.remf on import)

    assert "arith.remf" in {op.name for op in Arith.operations}


def test_located_block_label_clash():
    """The block-parsing hook still fires: a label defined twice is a located ParseError."""
    from xdsl.utils.exceptions import ParseError

    from diffc.compiler import parse_ir

    text = """func.func @f() {
  cf.br ^bb1
^bb1:
  cf.br ^bb1
^bb1:
  func.return
}
"""
    with pytest.raises(ParseError, match="block \\^bb1 is defined twice"):
        parse_ir(text, "twice.mlir")


def test_rounding_interpreter_hook():
    """The interpreter hook still runs after each op: f32 results are rounded to f32."""
    from diffc import interp

    m = interp.parse_module(
        "func.func @f(%x: f32) -> f32 {\n  %y = arith.addf %x, %x : f32\n  func.return %y : f32\n}\n"
    )
    (y,) = interp.run_function(m, "f", 0.1, float_rounding=True)
    assert y == float(__import__("numpy").float32(0.2))
