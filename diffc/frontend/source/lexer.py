"""Tokens of the Slang subset, each with its character span in the source."""

from __future__ import annotations

from dataclasses import dataclass

from diffc.frontend import feature
from diffc.frontend.errors import SYNTAX, FrontendError

PUNCT = sorted(
    """<<= >>= ++ -- += -= *= /= %= &= |= ^= == != <= >= && || << >> :: ->
    + - * / % & | ^ ! ~ < > = ? : ; , . ( ) [ ] { }""".split(),
    key=len,
    reverse=True,
)


@dataclass
class Token:
    kind: str  # "ident", "int", "float", "string", "punct", "eof"
    text: str
    start: int
    end: int
    value: object = None
    suffix: str = ""  # literal suffix: f, h, l (floats); u, l, ul (ints: unsigned, 64 bits)


# ASCII only: str.isalpha/isdigit also accept letters and digits of other scripts (and
# superscripts), which neither Slang nor OpenCL C take in names and numbers.
DIGITS = frozenset("0123456789")
IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") | DIGITS
MAX_INT_LITERAL = 2**64 - 1  # the widest integer types are 64 bits


def _is_ident_start(c: str) -> bool:
    return c in IDENT_CHARS and c not in DIGITS


def tokenize(text: str, filename: str) -> list[Token]:
    toks: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v":  # C's white space
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise FrontendError(SYNTAX, "unterminated comment", i, i + 2)
            i = j + 2
        elif _is_ident_start(c):
            j = i
            while j < n and text[j] in IDENT_CHARS:
                j += 1
            toks.append(Token("ident", text[i:j], i, j))
            i = j
        elif c in DIGITS or (c == "." and i + 1 < n and text[i + 1] in DIGITS):
            for lex in feature.hooks("lex_number"):  # a literal a feature adds (a hex float)
                if (found := lex(text, i)) is not None:
                    tok, i = found
                    toks.append(tok)
                    break
            else:
                i = _number(text, i, toks)
        elif c == '"':
            j = i + 1
            buf = []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    esc = text[j + 1]
                    buf.append({"n": "\n", "t": "\t", "\\": "\\", '"': '"', "0": "\0"}.get(esc, esc))
                    j += 2
                    continue
                if text[j] == "\n":
                    break
                buf.append(text[j])
                j += 1
            if j >= n or text[j] != '"':
                raise FrontendError(SYNTAX, "unterminated string literal", i, i + 1)
            toks.append(Token("string", text[i : j + 1], i, j + 1, "".join(buf)))
            i = j + 1
        else:
            for p in PUNCT:
                if text.startswith(p, i):
                    toks.append(Token("punct", p, i, i + len(p)))
                    i += len(p)
                    break
            else:
                shown = f"'{c}'" if c.isprintable() else f"U+{ord(c):04X}"
                raise FrontendError(SYNTAX, f"unexpected character {shown}", i, i + 1)
    toks.append(Token("eof", "", n, n))
    return toks


def _number(text: str, i: int, toks: list[Token]) -> int:
    n = len(text)
    j = i
    if text.startswith(("0x", "0X"), i):
        j = i + 2
        while j < n and text[j] in "0123456789abcdefABCDEF":
            j += 1
        if j == i + 2:
            raise FrontendError(SYNTAX, f"malformed number '{text[i:j]}' (no hex digits)", i, j)
        value: object = int(text[i + 2 : j], 16)
        kind = "int"
    else:
        while j < n and text[j] in DIGITS:
            j += 1
        kind = "int"
        if j < n and text[j] == "." and not (j + 1 < n and _is_ident_start(text[j + 1]) and text[j + 1] not in "fFhHlLeE"):
            kind = "float"
            j += 1
            while j < n and text[j] in DIGITS:
                j += 1
        if j < n and text[j] in "eE":
            k = j + 1
            if k < n and text[k] in "+-":
                k += 1
            if k < n and text[k] in DIGITS:
                kind = "float"
                j = k
                while j < n and text[j] in DIGITS:
                    j += 1
        body = text[i:j]
        value = float(body) if kind == "float" else int(body)
    suffix = ""
    k = j
    while k < n and text[k] in "fFhHlLuU":
        k += 1
    raw = text[j:k].lower()
    if raw:
        if raw in ("f", "h", "lf") or raw == "l" and kind == "float":  # `2l` is an int64_t, `2.0l` a double
            kind, suffix = "float", raw[0]
            value = float(value)  # type: ignore[arg-type]
        elif raw in ("u", "l", "ll", "ul", "ull", "lu", "llu"):
            suffix = ("u" if "u" in raw else "") + ("l" if "l" in raw else "")  # u: unsigned, l: 64 bits
        else:
            raise FrontendError(SYNTAX, f"unknown literal suffix '{text[j:k]}'", j, k)
    if k < n and text[k] in IDENT_CHARS:
        raise FrontendError(SYNTAX, f"malformed number '{text[i:k + 1]}'", i, k + 1)
    if kind == "int" and value > MAX_INT_LITERAL:  # type: ignore[operator]
        raise FrontendError(SYNTAX, f"integer literal {text[i:k]} is too large to be represented in any "
                            "integer type", i, k)  # (Slang's error 10012)
    toks.append(Token(kind, text[i:k], i, k, value, suffix))
    return k
