"""The one interface between the front end's phases and its language features.

A language feature (diffc/frontend/features/<name>.py) is a module that ends with
`FEATURE = Feature("name", <hook>=<function>, ...)`; features/__init__.py lists every feature in
FEATURES, in the order the phases try them, and installs that list when the front end is
imported. A phase asks `hooks("check_index")` for the functions the features gave for one of its
extension points and calls them in that order; the phases import no feature.

Every hook is optional. A hook that answers (check_*, lower_*) returns None for "not mine", and
the first answer wins; the others (declare_*, notice_*) are called for each feature that has them.
The checker is passed as `c` (checker/checking.py says what a feature may use of it), the parser
as `p`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

Hook = Callable[..., Any]


@dataclass(frozen=True)
class Prelude:
    """Slang declarations the front end adds, once a program, to a program that names one of
    `words` (its diagnostics name `file`)."""

    file: str
    text: str
    words: frozenset[str]


@dataclass(frozen=True)
class Feature:
    name: str
    # ---- phase 1, source (source/lexer.py)
    # text, i -> (Token, end) of a number literal starting at offset i, or None (then the next
    # feature's, then the lexer's own)
    lex_number: Hook | None = None
    # ---- phase 2, parsing (parser/parser.py)
    # words that may stand before a declaration (a global, a function, a type, a member) and
    # that the front end accepts and drops
    modifiers: frozenset[str] = frozenset()
    # declarations the feature's names come from, added to a program that names them
    prelude: Prelude | None = None
    # keyword -> p, attrs, start -> the top-level declaration starting with that keyword
    declarations: Mapping[str, Hook] = field(default_factory=dict)
    # keyword -> p, start -> the statement starting with that keyword (in a function body)
    statements: Mapping[str, Hook] = field(default_factory=dict)
    # keyword -> p, mods, start, requirement, prefix -> the methods a struct or interface member
    # starting with that keyword declares (None: not this feature's); `requirement`: in an
    # interface; `prefix`: the parameters of a `__generic<...>` before it
    members: Mapping[str, Hook] = field(default_factory=dict)
    # a declaration whose name is not an identifier (`T operator+(T a, T b)`): declarator_at(p, k)
    # says whether the tokens from p.peek(k) on are such a name, parse_declarator(p, attrs, mods,
    # type, start, prefix) parses the declaration from there
    declarator_at: Hook | None = None
    parse_declarator: Hook | None = None
    # name, name span, value, then, else, span -> the statement `if (let name = value) then else`
    if_let: Hook | None = None
    # p -> an expression starting at the current `(` that the feature parses (a lambda), or None
    parse_primary: Hook | None = None
    # ---- phase 3, checking (checker/checker.py); each returns the expression's type or None
    check_name: Hook | None = None  # c, e: A.Name (not a declared name)
    check_unary: Hook | None = None  # c, e: A.Unary, operand type
    check_binary: Hook | None = None  # c, e: A.Binary, lhs type, rhs type
    check_ternary: Hook | None = None  # c, e: A.Ternary, type of a, type of b (they differ)
    check_member: Hook | None = None  # c, e: A.Member, base type
    check_index: Hook | None = None  # c, e: A.Index, base type
    check_expr: Mapping[type, Hook] = field(default_factory=dict)  # an expression kind the feature adds: c, e
    # c, e: A.InitList, wanted type -> True when the feature checked the list
    check_init_list: Hook | None = None
    # c, e: A.Cast, source type, target type -> True when the feature allows that explicit cast
    # (`(float3x3)m4x4`)
    check_cast: Hook | None = None
    # c, e: the assigned expression, base: an A.Index / A.Member / `*p` on its way down, the type
    # of what base selects from -> True when that is memory the feature owns (raises when the
    # write is refused)
    check_write: Hook | None = None
    # c, d: A.Global, its type -> True when the feature declared the global
    declare_global: Hook | None = None
    declare_func: Hook | None = None  # c, d: A.Func (before its signature is checked)
    declare_param: Hook | None = None  # c, p: A.Param (rewritten in place, before its type is resolved)
    # c, e: A.Assign -> its type, when the feature gives the assignment its meaning (a property's
    # setter); c, e, target type -> the type of a compound assignment `x op= v` the feature owns
    check_assign: Hook | None = None
    check_compound: Hook | None = None
    # c, owner: T.Struct, name -> whether bare `name` in a method of owner means `this.name`
    implicit_member: Hook | None = None
    check_signature: Hook | None = None  # c, params: list[PInfo], result type, d: A.Func (raises)
    # c, d: A.Struct, template -> the struct as declared with what the feature adds to it
    extend_struct: Hook | None = None
    # c, d: A.Struct, (name, generic values) -> the interfaces each type parameter has there
    instance_constraints: Hook | None = None
    declare_struct: Hook | None = None  # c, d: A.Struct, s: T.Struct (after its fields)
    # c, s: A.VarDecl, t: T.Struct -> the initializer `T x;` gets (its fields' default values), or None
    default_init: Hook | None = None
    # c, type name, t: A.TypeRef -> the type a name the feature adds means (`float3x3`, `Texture2D`)
    resolve_type: Hook | None = None
    # c, interface name, t: A.TypeRef -> the type of a value of that interface (dynamic.py)
    resolve_interface: Hook | None = None
    # c, interface value type, atomic, t: A.TypeRef: an interface value in memory (raises)
    check_element: Hook | None = None
    # calls (checker/calls.py): c, e: A.Call, name -> the type of a call of a function the
    # feature adds (`mul`); c, e, callee: A.Member, base type -> of a method call on a value of a
    # type the feature owns; c, e, t -> of a constructor call `T(...)` of such a type
    check_call: Hook | None = None
    # c, e: A.Call, local: the Local its callee names -> the type of a call of a local variable
    # (a lambda's), or None
    check_local_call: Hook | None = None
    check_method: Hook | None = None
    check_constructor: Hook | None = None
    # e -> whether expression e is an element of work-group memory (atomics may update it)
    shared_memory: Hook | None = None


_installed: tuple[Feature, ...] = ()
_by_hook: dict[str, list[Hook]] = {}  # hook name -> the installed features' functions (the checker asks often)


def install(features: list[Feature]) -> None:
    global _installed
    names = [f.name for f in features]
    assert len(set(names)) == len(names), f"two features of one name: {names}"
    _installed = tuple(features)
    _by_hook.clear()
    for name in _HOOKS:
        _by_hook[name] = [h for f in _installed if (h := getattr(f, name)) and callable(h)]


def installed() -> tuple[Feature, ...]:
    return _installed


def hooks(name: str) -> list[Hook]:
    """The installed features' functions for extension point `name`, in FEATURES' order."""
    return _by_hook[name]


def first(name: str, *args) -> Any:
    """The first answer (not None) of the features' `name` hooks, or None."""
    for h in hooks(name):
        if (r := h(*args)) is not None:
            return r
    return None


def modifiers() -> frozenset[str]:
    return frozenset().union(*(f.modifiers for f in _installed))


def preludes() -> list[Prelude]:
    return [f.prelude for f in _installed if f.prelude is not None]


def members() -> dict[str, Hook]:
    return {k: h for f in _installed for k, h in f.members.items()}


def declarations() -> dict[str, Hook]:
    return {k: h for f in _installed for k, h in f.declarations.items()}


def statements() -> dict[str, Hook]:
    return {k: h for f in _installed for k, h in f.statements.items()}


def expr_kinds() -> dict[type, Hook]:
    return {k: h for f in _installed for k, h in f.check_expr.items()}


_HOOKS = {f.name for f in fields(Feature)}
