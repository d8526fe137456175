"""Macros of the preprocessor: definitions, expansion and the constant expressions of `#if`.

Expansion follows C: a function-like macro's arguments are expanded before they are substituted
(except next to `#` and `##`), and the result is rescanned with the rest of the line. Each token
carries the set of macros it came out of (`PPToken.hide`); a macro never expands inside its own
expansion, so `#define X X + 1` stops after one step instead of recursing forever.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from diffc.frontend.errors import ARG_COUNT, SYNTAX, UNSUPPORTED
from diffc.frontend.source.pp_tokens import Expansion, LogicalLine, PPToken, retokenize, tokenize

MAX_EXPANDED_TOKENS = 1_000_000  # a line's expansion beyond this is refused, not waited for
MAX_ARGUMENT_NESTING = 100  # macro calls in arguments of macro calls: each level is a recursion
VA_ARGS = "__VA_ARGS__"
BUILTIN_MACROS = ("__LINE__", "__FILE__")


class PPError(Exception):
    """An error at `token` (or at the directive's `#` when None); preprocess.py locates it."""

    def __init__(self, code: str | None, message: str, token: PPToken | None):
        super().__init__(message)
        self.code, self.message, self.token = code, message, token


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...] | None  # None: object-like; the last is __VA_ARGS__ when variadic
    variadic: bool
    body: tuple[PPToken, ...]


# Stands for an empty argument next to `##` until the paste is done (C's "placemarker").
_PLACEMARKER = PPToken("other", "", 0, 0)


def parse_define(toks: list[PPToken], at: PPToken) -> Macro:
    """`toks`: what follows `#define` (comments removed)."""
    if not toks or toks[0].kind != "id":
        raise PPError(SYNTAX, "#define needs a macro name", toks[0] if toks else at)
    name = toks[0]
    if name.text == "defined":
        raise PPError(SYNTAX, "'defined' cannot be a macro name", name)
    rest = toks[1:]
    params: list[str] | None = None
    variadic = False
    if rest and rest[0].text == "(" and not rest[0].space_before:  # function-like
        params, k = [], 1
        while True:
            if k >= len(rest):
                raise PPError(SYNTAX, f"missing ')' in the parameters of macro '{name.text}'", rest[-1])
            t = rest[k]
            if t.text == ")" and not params:
                k += 1
                break
            if t.text == "...":
                params.append(VA_ARGS)
                variadic = True
            elif t.kind == "id" and t.text not in params:
                params.append(t.text)
            else:
                raise PPError(SYNTAX, f"expected a parameter name of macro '{name.text}'", t)
            k += 1
            if k < len(rest) and rest[k].text == ")":
                k += 1
                break
            if k >= len(rest) or rest[k].text != "," or variadic:
                raise PPError(SYNTAX, f"expected ',' or ')' in the parameters of macro '{name.text}'",
                              rest[min(k, len(rest) - 1)])
            k += 1
        rest = rest[k:]
    body = tuple(rest)
    for k, t in enumerate(body):
        if t.kind == "punct" and t.text == "##" and k in (0, len(body) - 1):
            raise PPError(SYNTAX, "'##' cannot begin or end a macro's body", t)
        if params is not None and t.kind == "punct" and t.text == "#":
            if k + 1 >= len(body) or body[k + 1].text not in params:
                raise PPError(SYNTAX, "'#' in a function-like macro must be followed by a parameter", t)
    return Macro(name.text, tuple(params) if params is not None else None, variadic, body)


class Macros:
    def __init__(self, defines: dict[str, str] | None = None):
        self.defs: dict[str, Macro] = {}
        self.nesting = 0  # of argument expansions under way
        for name, value in (defines or {}).items():  # like `-D name=value`: an object-like macro
            body, _ = tokenize(LogicalLine(value, 0, 0, [(0, 0, 0)]), False)
            self.defs[name] = Macro(name, None, False, tuple(body))

    def expand(self, toks: list[PPToken], file: str,
               more: Callable[[], list[PPToken] | None] | None = None) -> tuple[list[PPToken], bool]:
        """`toks` with every macro call expanded, and whether there was any. `more` gives the
        tokens of the next line, for a function-like macro's arguments that go on there."""
        ts, out, changed = deque(toks), [], False
        produced = 0
        while ts:
            t = ts.popleft()
            if t.kind != "id" or t.text in t.hide:
                out.append(t)
                continue
            name = t.text
            m = self.defs.get(name)
            if m is None:
                if name in BUILTIN_MACROS:
                    out.append(self._builtin(t, file))
                    changed = True
                else:
                    out.append(t)
                continue
            args, last = None, t
            if m.params is not None:
                k = self._open_paren(ts, more)
                if k is None:  # a function-like macro's name without a call is just a name
                    out.append(t)
                    continue
                for _ in range(k + 1):
                    ts.popleft()
                args, last = self._arguments(t, m, ts, more)
            call = t.expansion or (Expansion(t.line, t.col, last.end_line, last.end_col) if last.expansion is None
                                   else Expansion(t.line, t.col, t.end_line, t.end_col))
            hide = (t.hide & last.hide if args is not None else t.hide) | {name}
            body = self._substitute(m, args, hide, call, file)
            if body:
                body[0] = body[0].with_(space_before=t.space_before)
            produced += len(body)
            if produced > MAX_EXPANDED_TOKENS:
                raise PPError(UNSUPPORTED, f"a macro expansion of more than {MAX_EXPANDED_TOKENS} tokens "
                              f"(from '{name}') is not supported", t)
            ts.extendleft(reversed(body))
            changed = True
        return out, changed

    @staticmethod
    def _builtin(t: PPToken, file: str) -> PPToken:
        call = t.expansion or Expansion(t.line, t.col, t.end_line, t.end_col)
        if t.text == "__LINE__":
            return t.with_(kind="num", text=str(call.line), expansion=call)
        quoted = file.replace("\\", "\\\\").replace('"', '\\"')
        return t.with_(kind="str", text=f'"{quoted}"', expansion=call)

    @staticmethod
    def _open_paren(ts: deque[PPToken], more) -> int | None:
        """The index in `ts` of the `(` after a function-like macro's name, or None."""
        k = 0
        while True:
            while k < len(ts) and ts[k].kind == "comment":
                k += 1
            if k < len(ts) or more is None:
                break
            extra = more()
            if extra is None:
                break
            ts.extend(extra)
        return k if k < len(ts) and ts[k].kind == "punct" and ts[k].text == "(" else None

    @staticmethod
    def _arguments(t: PPToken, m: Macro, ts: deque[PPToken], more) -> tuple[list[list[PPToken]], PPToken]:
        """The arguments of a call of `m` (after its `(`), and its closing `)`."""
        assert m.params is not None
        args: list[list[PPToken]] = []
        current: list[PPToken] = []
        depth = 0
        while True:
            if not ts:
                extra = more() if more is not None else None
                if extra is None:
                    raise PPError(SYNTAX, f"unterminated call of macro '{m.name}'", t)
                ts.extend(extra)
                continue
            a = ts.popleft()
            if a.kind == "comment":
                continue
            if a.kind == "punct" and a.text == "(":
                depth += 1
            elif a.kind == "punct" and a.text == ")":
                if depth == 0:
                    args.append(current)
                    break
                depth -= 1
            elif a.kind == "punct" and a.text == "," and depth == 0 and not (m.variadic and len(args) == len(m.params) - 1):
                args.append(current)
                current = []
                continue
            current.append(a)
        n = len(m.params)
        if n == 0 and args == [[]]:
            args = []
        if m.variadic and len(args) == n - 1:
            args.append([])
        if len(args) != n:
            raise PPError(ARG_COUNT, f"macro '{m.name}' takes {n} argument{'s' * (n != 1)}, "
                          f"{len(args)} given", t)
        return args, a

    def _substitute(self, m: Macro, args: list[list[PPToken]] | None, hide: frozenset[str],
                    call: Expansion, file: str) -> list[PPToken]:
        params = {p: k for k, p in enumerate(m.params or ())}
        expanded: dict[int, list[PPToken]] = {}

        def arg(k: int) -> list[PPToken]:
            if k not in expanded:
                if self.nesting >= MAX_ARGUMENT_NESTING:
                    raise PPError(UNSUPPORTED, f"macro calls nested more than {MAX_ARGUMENT_NESTING} deep "
                                  "in arguments are not supported", args[k][0])  # type: ignore[index]
                self.nesting += 1
                try:
                    expanded[k] = self.expand(args[k], file)[0]  # type: ignore[index]
                finally:
                    self.nesting -= 1
            return expanded[k]

        body, out, i = m.body, [], 0
        while i < len(body):
            b = body[i]
            nxt = body[i + 1] if i + 1 < len(body) else None
            if args is not None and b.kind == "punct" and b.text == "#" and nxt is not None:
                out.append(b.with_(kind="str", text=_stringize(args[params[nxt.text]])))
                i += 2
            elif b.kind == "punct" and b.text == "##" and nxt is not None:
                rhs = list(args[params[nxt.text]]) if args is not None and nxt.text in params else [nxt]
                lhs = out.pop()
                if lhs is _PLACEMARKER:
                    out.extend(rhs or [_PLACEMARKER])
                elif not rhs:
                    out.append(lhs)
                else:
                    out.extend(retokenize(lhs.text + rhs[0].text, lhs) + rhs[1:])
                i += 2
            elif args is not None and b.kind == "id" and b.text in params:
                raw = args[params[b.text]]
                pasted = nxt is not None and nxt.kind == "punct" and nxt.text == "##"
                out.extend((raw or [_PLACEMARKER]) if pasted else arg(params[b.text]))
                i += 1
            else:
                out.append(b)
                i += 1
        return [t.with_(hide=t.hide | hide, expansion=call) for t in out if t is not _PLACEMARKER]


def _stringize(toks: list[PPToken]) -> str:
    parts = []
    for k, t in enumerate(toks):
        text = t.text.replace("\\", "\\\\").replace('"', '\\"') if t.kind in ("str", "chr") else t.text
        parts.append((" " if t.space_before and k else "") + text)
    return '"' + "".join(parts) + '"'


# --- #if expressions ------------------------------------------------------------------------

_BINARY = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
    "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}


def evaluate_condition(toks: list[PPToken], macros: Macros, file: str, at: PPToken) -> int:
    """The value of `#if`'s expression: `defined` first, then macros, then any name left is 0."""
    resolved: list[PPToken] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "id" and t.text == "defined":
            j = i + 1
            paren = j < len(toks) and toks[j].text == "("
            j += paren
            if j >= len(toks) or toks[j].kind != "id":
                raise PPError(SYNTAX, "'defined' needs a macro name", toks[min(j, len(toks) - 1)])
            if paren and (j + 1 >= len(toks) or toks[j + 1].text != ")"):
                raise PPError(SYNTAX, "missing ')' after 'defined(NAME'", toks[j])
            name = toks[j].text
            known = name in macros.defs or name in BUILTIN_MACROS
            resolved.append(t.with_(kind="num", text="1" if known else "0"))
            i = j + 1 + paren
        else:
            resolved.append(t)
            i += 1
    expanded, _ = macros.expand(resolved, file)
    return _ConditionParser(expanded, at).parse()


class _ConditionParser:
    def __init__(self, toks: list[PPToken], at: PPToken):
        self.toks, self.k, self.at = toks, 0, at
        self.depth = 0  # of unary operators and parentheses, each a recursion

    def parse(self) -> int:
        if not self.toks:
            raise PPError(SYNTAX, "#if needs an expression", self.at)
        value = self.ternary(True)
        if self.k < len(self.toks):
            raise PPError(SYNTAX, f"unexpected '{self.toks[self.k].text}' in #if expression", self.toks[self.k])
        return value

    def peek(self) -> PPToken | None:
        return self.toks[self.k] if self.k < len(self.toks) else None

    def expect(self, text: str) -> None:
        t = self.peek()
        if t is None or t.text != text:
            raise PPError(SYNTAX, f"expected '{text}' in #if expression", t or self.toks[-1])
        self.k += 1

    def ternary(self, live: bool) -> int:
        cond = self.binary(1, live)
        t = self.peek()
        if t is None or t.text != "?":
            return cond
        self.k += 1
        a = self.ternary(live and cond != 0)
        self.expect(":")
        b = self.ternary(live and cond == 0)
        return a if cond else b

    def binary(self, min_prec: int, live: bool) -> int:
        lhs = self.unary(live)
        while (t := self.peek()) is not None and t.kind == "punct" and _BINARY.get(t.text, 0) >= min_prec:
            op, prec = t.text, _BINARY[t.text]
            self.k += 1
            rhs_live = live and not (op == "&&" and not lhs) and not (op == "||" and lhs)
            rhs = self.binary(prec + 1, rhs_live)
            lhs = _apply(op, lhs, rhs, t, rhs_live)
        return lhs

    def unary(self, live: bool) -> int:
        t = self.peek()
        if t is None:
            raise PPError(SYNTAX, "#if expression ends too early", self.toks[-1])
        self.k += 1
        self.depth += 1
        try:
            return self._unary(t, live)
        finally:
            self.depth -= 1

    def _unary(self, t: PPToken, live: bool) -> int:
        if self.depth > MAX_ARGUMENT_NESTING:
            raise PPError(UNSUPPORTED, f"#if expressions nested more than {MAX_ARGUMENT_NESTING} deep are not supported", t)
        if t.kind == "punct" and t.text in ("!", "~", "-", "+"):
            v = self.unary(live)
            return {"!": int(not v), "~": ~v, "-": -v, "+": v}[t.text]
        if t.kind == "punct" and t.text == "(":
            v = self.ternary(live)
            self.expect(")")
            return v
        if t.kind == "num":
            return _integer(t)
        if t.kind == "id":  # a name no macro defines
            return 1 if t.text == "true" else 0
        if t.kind == "chr" and len(t.text) == 3:
            return ord(t.text[1])
        raise PPError(SYNTAX, f"unexpected '{t.text}' in #if expression", t)


def _apply(op: str, a: int, b: int, t: PPToken, live: bool) -> int:
    if op in ("/", "%"):
        if b == 0:
            if live:
                raise PPError(SYNTAX, "division by zero in #if expression", t)
            return 0
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # C truncates toward zero
        return q if op == "/" else a - q * b
    if op in ("<<", ">>") and not 0 <= b < 64:
        if live:
            raise PPError(SYNTAX, f"shift by {b} in #if expression", t)
        return 0
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
        "*": lambda: a * b,
    }[op]()


def _integer(t: PPToken) -> int:
    text = t.text.rstrip("uUlL")
    try:
        if text[:2] in ("0x", "0X"):
            return int(text[2:], 16)
        if text[:2] in ("0b", "0B"):
            return int(text[2:], 2)
        if len(text) > 1 and text[0] == "0":
            return int(text[1:], 8)
        return int(text)
    except ValueError:
        raise PPError(SYNTAX, f"'{t.text}' is not an integer (#if takes integer expressions)", t) from None
