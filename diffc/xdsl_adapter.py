"""Every use of an xDSL name that is not public API, in one place.

xDSL (pinned to 0.74 in pyproject.toml) has no public way to do these four things, so diffc
reaches into its internals here and nowhere else; tests/test_xdsl_adapter.py checks that each
internal still exists with the shape used below, so an xDSL upgrade that changes one fails
there, by name, instead of somewhere deep in a pass.

* `add_ops_to_dialect`: a dialect object's op list (`Dialect._operations`): MLIR's arith has
  ops xDSL's lacks (arith.remf), and a universe can only add whole dialects.
* `HookedParser`: the parser's block parsing (`Parser._parse_block`), a dialect attribute or
  type body (`Parser._parse_dialect_type_or_attribute_body`) and the current token
  (`Parser._current_token`), so that diffc's parser can locate errors xDSL reports without a
  place (or with a KeyError).
* `ResultHookInterpreter`: the interpreter's per-op step (`Interpreter._run_op`), so that the
  reference interpreter can round each f32 / f16 result to its width.
"""

from __future__ import annotations

from typing import Any

from xdsl.interpreter import Interpreter, OpImplResult, PythonValues
from xdsl.ir import Dialect, Operation
from xdsl.parser import Parser

# The internals used below, by owner: the test checks each exists.
PRIVATE_NAMES: dict[type | str, tuple[str, ...]] = {
    Dialect: ("_operations",),
    Parser: ("_parse_block", "_parse_dialect_type_or_attribute_body", "_current_token"),
    Interpreter: ("_run_op",),
}


def add_ops_to_dialect(dialect: Dialect, ops: tuple[type[Operation], ...]) -> None:
    """Appends `ops` to `dialect`'s op list, keeping an op of the same name the dialect defines."""
    known = {op.name for op in dialect.operations}
    for op in ops:
        if op.name not in known:
            dialect._operations.append(op)


class HookedParser(Parser):
    """xDSL's parser with three hooks a subclass may override:

    * `block_label_clash(token)`: xDSL's block parsing raised KeyError (a label used, then
      defined twice); the subclass raises a located ParseError;
    * `attribute_body_failed(error, start)`: a dialect type or attribute failed its verifier
      while it was parsed; `start` is where its body began;
    * `token_start()`: where the current token begins (for locating ops)."""

    def token_start(self) -> int:
        return self._current_token.span.start

    def block_label_clash(self, token: Any) -> Any:  # pragma: no cover - overridden
        raise KeyError(token.text)

    def attribute_body_failed(self, error: Exception, start: int) -> Any:  # pragma: no cover
        raise error

    def _parse_block(self):
        token = self._current_token
        try:
            return super()._parse_block()
        except KeyError:
            return self.block_label_clash(token)

    def _parse_dialect_type_or_attribute_body(self, attr_name, is_type, is_opaque, starting_opaque_pos):
        from xdsl.utils.exceptions import VerifyException

        start = self.pos
        try:
            return super()._parse_dialect_type_or_attribute_body(
                attr_name, is_type, is_opaque, starting_opaque_pos
            )
        except VerifyException as e:
            return self.attribute_body_failed(e, start)


class ResultHookInterpreter(Interpreter):
    """xDSL's interpreter with `after_op(op, result) -> result` called after every op."""

    def after_op(self, op: Operation, result: OpImplResult) -> OpImplResult:
        return result

    def _run_op(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        return self.after_op(op, super()._run_op(op, inputs))
