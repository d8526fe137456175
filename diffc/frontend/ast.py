"""The syntax tree of the Slang subset. Every node has `span` = (start, end) character offsets;
the type checker fills `ty` on expressions (and a few resolution fields)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Span = tuple[int, int]


@dataclass
class Node:
    span: Span = field(default=(0, 0), kw_only=True)


@dataclass
class TypeRef(Node):
    name: str
    args: list[Any] = field(default_factory=list)  # TypeRef, int, or str (a generic int parameter)
    dims: list[Any] = field(default_factory=list)  # array sizes (int or generic parameter name), outermost first
    pointer: int = 0  # how many `*` follow the type
    space: str = ""  # a pointer's address space: "" device memory, "groupshared" (`Ptr<T, ..., GroupShared>`)
    fixed: Any = field(default=None, repr=False)  # a resolved type a generic instance put here (generics.py)


@dataclass
class Attr(Node):
    name: str
    args: list[Any] = field(default_factory=list)  # expressions


# ---- expressions ------------------------------------------------------------------------


@dataclass
class Expr(Node):
    ty: Any = field(default=None, kw_only=True, repr=False)


@dataclass
class Num(Expr):
    value: float | int
    is_float: bool
    suffix: str = ""


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class Str(Expr):
    value: str


@dataclass
class Name(Expr):
    id: str
    sym: Any = field(default=None, repr=False)
    targs: list[Any] = field(default_factory=list)  # explicit generic arguments: `f<4>(...)`, `bit_cast<uint>(x)`


@dataclass
class Unary(Expr):
    op: str
    operand: Expr


@dataclass
class Binary(Expr):
    op: str
    lhs: Expr
    rhs: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    a: Expr
    b: Expr


@dataclass
class Assign(Expr):
    op: str  # "=", "+=", ...
    target: Expr
    value: Expr


@dataclass
class IncDec(Expr):
    op: str  # "++" or "--"
    prefix: bool
    target: Expr


@dataclass
class Call(Expr):
    callee: Expr
    args: list[Expr]
    no_diff: bool = False
    kind: str = ""  # set by the checker: "func", "builtin", "ctor", "fwd", "bwd", ...
    target: Any = field(default=None, repr=False)


@dataclass
class Member(Expr):
    base: Expr
    name: str
    name_span: Span = (0, 0)
    arrow: bool = False  # `p->name` (`.` works on pointers too, as in Slang)
    targs: list[Any] = field(default_factory=list)  # a generic method's explicit arguments: `T::make<4>()`


@dataclass
class Index(Expr):
    base: Expr
    index: Expr
    more: list[Expr] = field(default_factory=list)  # `obj[i, j]`: a subscript operator's further arguments


@dataclass
class Cast(Expr):
    type: TypeRef
    operand: Expr


@dataclass
class TypeTest(Expr):
    """`x is S` (a bool) and `x as S` (an `Optional<S>`) on an interface-typed value (optional.py)."""

    op: str  # "is" | "as"
    operand: Expr
    type: TypeRef


@dataclass
class InitList(Expr):
    items: list[Expr]


@dataclass
class TypeExpr(Expr):
    """A type used as a value: `float3` in `float3(...)`, `float` in `float.dzero()`."""

    type: TypeRef


# ---- statements -------------------------------------------------------------------------


@dataclass
class Stmt(Node):
    pass


@dataclass
class VarDecl(Stmt):
    kind: str  # "let", "var", "typed"
    type: TypeRef | None
    name: str
    init: Expr | None
    is_const: bool = False
    decl_ty: Any = field(default=None, repr=False)


@dataclass
class DeclGroup(Stmt):
    decls: list[VarDecl]


@dataclass
class ExprStmt(Stmt):
    expr: Expr


@dataclass
class Block(Stmt):
    stmts: list[Stmt]


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    orelse: Stmt | None


@dataclass
class For(Stmt):
    init: Stmt | None
    cond: Expr | None
    step: Expr | None
    body: Stmt
    attrs: list[Attr] = field(default_factory=list)


@dataclass
class While(Stmt):
    cond: Expr
    body: Stmt
    attrs: list[Attr] = field(default_factory=list)
    do_while: bool = False


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Case(Node):
    values: list[Expr] | None  # None: default
    body: list[Stmt]


@dataclass
class Switch(Stmt):
    value: Expr
    cases: list[Case]


# ---- declarations -----------------------------------------------------------------------


@dataclass
class Param(Node):
    mods: set[str]
    type: TypeRef
    name: str
    semantic: str | None = None
    default: Expr | None = None  # `float s = 2.0`


@dataclass
class Func(Node):
    attrs: list[Attr]
    ret_mods: set[str]
    ret: TypeRef
    name: str
    params: list[Param]
    body: Block | None
    name_span: Span = (0, 0)
    generic_params: list[str] = field(default_factory=list)  # `<int N, int M>`, `<T : IFoo>`
    mods: set[str] = field(default_factory=set)  # static, public, ...
    type_params: dict[str, list[str]] = field(default_factory=dict)  # type parameter -> its interfaces
    generic_defaults: dict[str, Any] = field(default_factory=dict)  # parameter -> default (TypeRef or int Expr)
    # `<I, O, M : IModel<I, O>>`: the generic interface instances its parameters conform to
    param_bases: list[TypeRef] = field(default_factory=list)


@dataclass
class Field(Node):
    mods: set[str]
    type: TypeRef
    name: str
    init: Expr | None = None  # `static const T x = value;`
    derivative_member: tuple[str, Span] | None = None  # `[DerivativeMember(Differential.f)]`: f, and where
    redeclared: TypeRef | None = None  # the type an extension's `extern` declaration of the field gives


@dataclass
class Struct(Node):
    name: str
    bases: list[str]
    fields: list[Field]
    methods: list[Func] = field(default_factory=list)
    generic_params: list[str] = field(default_factory=list)
    aliases: list[Typedef] = field(default_factory=list)  # `typealias X = T;` inside the struct
    type_params: dict[str, list[str]] = field(default_factory=dict)  # type parameter -> its interfaces
    generic_defaults: dict[str, Any] = field(default_factory=dict)  # parameter -> default (TypeRef or int Expr)
    # the bases named with generic arguments (`: IFoo<8>`), for dynamic dispatch over `IFoo<8>`
    generic_bases: list[TypeRef] = field(default_factory=list)


@dataclass
class Interface(Node):
    """`interface I : J { float f(float x); associatedtype A : IFoo; ... }` (interfaces.py)."""

    name: str
    bases: list[str]
    methods: list[Func]  # requirements; one with a body is a default implementation
    assoc: dict[str, list[str]] = field(default_factory=dict)  # associatedtype -> its interfaces
    generic_params: list[str] = field(default_factory=list)
    attrs: list[Attr] = field(default_factory=list)  # `[anyValueSize(16)]` (dynamic_buffers.py)


@dataclass
class Extension(Node):
    """`extension S : I { methods }`, `extension float : I { ... }`: methods and conformances
    added to an existing type."""

    target: TypeRef
    bases: list[str]
    methods: list[Func]
    aliases: list[Typedef] = field(default_factory=list)
    generic_params: list[str] = field(default_factory=list)
    type_params: dict[str, list[str]] = field(default_factory=dict)
    statics: list[Field] = field(default_factory=list)  # `static const` fields, `extern` declarations
    # `extension<I, O, M : IModel<I, O>> M`: the generic interface instances its parameters conform to
    param_bases: list[TypeRef] = field(default_factory=list)
    generic_bases: list[TypeRef] = field(default_factory=list)  # `: IModel<T[W], T[W]>`: the ones it adds


@dataclass
class Typedef(Node):
    type: TypeRef
    name: str


@dataclass
class EnumCase(Node):
    name: str
    value: Expr | None  # `B = 5`; None: one more than the case before (0 for the first)


@dataclass
class Enum(Node):
    """`enum E { A, B = 5 }` / `enum class E : uint { ... }`: an integer type with named constants."""

    name: str
    cases: list[EnumCase]
    base: TypeRef | None = None
    scoped: bool = False  # `enum class`: cases only as E.A / E::A


@dataclass
class Global(Node):
    mods: set[str]
    type: TypeRef
    name: str
    init: Expr | None = None


@dataclass
class Program(Node):
    decls: list[Node]


def walk(node):
    """Every node below `node` (itself included), depth first; lists are walked too. (A stack,
    not recursion: a flat chain `x + x + ... + x` is as deep as it is long.)"""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, list):
            stack.extend(reversed(node))
            continue
        if not isinstance(node, Node):
            continue
        children = [v for k, v in vars(node).items()
                    if isinstance(v, Node | list) and (isinstance(v, Node) or k not in _NOT_CHILDREN)]
        stack.extend(reversed(children))


_NOT_CHILDREN = ("ty", "sym", "target", "decl_ty", "span")  # (facts the checker attached, unless nodes)


def replace_child(root: Node, old: Node, new: Node) -> bool:
    """Puts `new` where `old` stands in root's subtree (the first place, depth first): in a field
    or a list element of the node that holds it. Whether old was found."""
    for node in walk(root):
        if not isinstance(node, Node):
            continue
        for k, v in vars(node).items():
            if v is old:
                setattr(node, k, new)
                return True
            if isinstance(v, list):
                for i, x in enumerate(v):
                    if x is old:
                        v[i] = new
                        return True
    return False
