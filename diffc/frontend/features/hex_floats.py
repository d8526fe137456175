"""Hexadecimal floating-point literals, as in C and Slang: `0x1p-24`, `0x1.8p+3f`, `0X.Cp1h`.

The digits before and after the point are hexadecimal, `p` gives a power of two in decimal, and
the exponent is required (without it `0x18` is an int). The suffixes are a decimal literal's
(`f` float, `h` half, `l`/`lf` double). The value is exact: the literal names a binary
fraction, which the float it is written for holds whenever it has the bits."""

from __future__ import annotations

import re

from diffc.frontend.errors import SYNTAX, FrontendError
from diffc.frontend.feature import Feature
from diffc.frontend.source.lexer import IDENT_CHARS, Token

_HEX_FLOAT = re.compile(r"0[xX](?P<int>[0-9a-fA-F]*)(?:\.(?P<frac>[0-9a-fA-F]*))?[pP](?P<exp>[+-]?[0-9]+)")
_SUFFIXES = {"": "", "f": "f", "h": "h", "l": "l", "lf": "l"}


def lex_number(text: str, i: int) -> tuple[Token, int] | None:
    m = _HEX_FLOAT.match(text, i)
    if m is None:
        return None
    digits = m.group("int") + (m.group("frac") or "")
    if not digits:
        raise FrontendError(SYNTAX, f"malformed number '{m.group(0)}' (no hex digits)", i, m.end())
    value = float.fromhex(f"0x{m.group('int') or '0'}.{m.group('frac') or '0'}p{m.group('exp')}")
    j = k = m.end()
    while k < len(text) and text[k] in "fFhHlL":
        k += 1
    suffix = _SUFFIXES.get(text[j:k].lower())
    if suffix is None:
        raise FrontendError(SYNTAX, f"unknown literal suffix '{text[j:k]}'", j, k)
    if k < len(text) and text[k] in IDENT_CHARS:
        raise FrontendError(SYNTAX, f"malformed number '{text[i:k + 1]}'", i, k + 1)
    return Token("float", text[i:k], i, k, value, suffix), k


FEATURE = Feature("hex float literals", lex_number=lex_number)
