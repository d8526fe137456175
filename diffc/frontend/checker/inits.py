"""Struct constructors (`__init(...)`): each is rewritten, right after parsing, into a static
method `__init` that returns the struct. Its body starts with `S this;` (zero fields, as every
declaration here), ends with `return this;`, and a bare `return;` inside it becomes
`return this;`. A call `S(a, b)`, or an initializer list `{a, b}` for an S, of a struct with
constructors calls the overload of `__init` the arguments pick (overloads.py); a struct without
any keeps field-wise construction. Being an
ordinary function, a constructor is differentiable when it is marked so."""

from __future__ import annotations

from diffc.frontend import ast as A

INIT = "__init"


def constructor_method(func: A.Func, struct_name: str, generic_params: list[str]) -> A.Func:
    """The static method that `__init(...) { body }` of `struct_name` means (in place); the struct's
    type is `S<N, ...>` in a generic struct (its instances substitute the values)."""
    func.ret = A.TypeRef(struct_name, list(generic_params), span=func.name_span)
    func.mods = set(func.mods) | {"static"}
    if func.body is not None:
        at = func.body.span
        this = A.VarDecl("typed", A.TypeRef(struct_name, list(generic_params), span=func.name_span), "this", None,
                         span=(at[0], at[0]))
        for node in A.walk(func.body):
            if isinstance(node, A.Return) and node.value is None:
                node.value = A.Name("this", span=node.span)
        ret = A.Return(A.Name("this", span=(at[1], at[1])), span=(at[1], at[1]))
        func.body = A.Block([this, *func.body.stmts, ret], span=at)
    return func


def as_constructor_call(e: A.InitList, ctor: str) -> A.Call:
    """`S s = { a, b };` of a struct with constructors calls one (as in Slang): the list means
    the call `__init(a, b)`."""
    return A.Call(A.Name(ctor, span=e.span), e.items, span=e.span)
