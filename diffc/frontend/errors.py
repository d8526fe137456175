"""Front-end errors: a code, a message and a character span, turned into a located
`DiffcError` (file:line:col: error[CODE]: message + source line + caret) at the API boundary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.diagnostics import DiffcError, format_diagnostic

if TYPE_CHECKING:
    from diffc.frontend.source.source_map import SourceMap

# Error codes of the Slang front end.
SYNTAX = "E0001"  # the text does not parse
UNDEFINED = "E0002"  # a name that is declared nowhere
TYPE_MISMATCH = "E0003"  # a value of the wrong type
UNKNOWN_MEMBER = "E0004"  # a field, swizzle or method the type does not have
ARG_COUNT = "E0005"  # a call with the wrong number of arguments
NOT_DIFFERENTIABLE = "E0006"  # derivative-carrying value into a non-differentiable function or raw pointer
UNBOUNDED_LOOP = "E0007"  # a loop without a bound in a backward-differentiable function
UNSUPPORTED = "E0008"  # valid Slang that this front end does not handle
REDEFINED = "E0009"  # a second global, struct or local of one name (in one scope)


class FrontendError(Exception):
    def __init__(self, code: str, message: str, start: int, end: int):
        super().__init__(message)
        self.code = code
        self.message = message
        self.start = start
        self.end = end

    def to_diffc_error(self, source_map: SourceMap) -> DiffcError:
        """The located message; `source_map` takes the span (offsets into the text the lexer
        read) back to the file, line and column it came from."""
        loc = source_map.location(self.start)
        end = source_map.location(max(self.start, self.end - 1), end=True)
        same_line = (end.file, end.line) == (loc.file, loc.line) and end.col >= loc.col
        length = end.col - loc.col + 1 if same_line else 1
        msg = format_diagnostic(loc, self.message, self.code, source_map.source(loc.file), max(1, length))
        return DiffcError(msg)
