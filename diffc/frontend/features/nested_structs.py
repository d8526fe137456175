"""A struct declared inside another struct (`struct Adam<T> { struct State<S> { ... } ... }`).

The inner struct is a struct of the program like any other: it is declared at the top level, by
its own name, before the struct that holds it, and the outer struct's members name it as they
would any struct (`typealias Moments = State<T>;`). An inner struct that uses the outer struct's
type parameters would be a different struct for each outer instance, which this does not make:
that is refused (E0008)."""

from __future__ import annotations

from diffc.frontend.errors import UNSUPPORTED, FrontendError
from diffc.frontend.feature import Feature


def parse_nested_struct(p, mods: set[str], start: int, requirement: bool, prefix) -> list | None:
    if requirement or prefix:
        return None  # (an interface's or a `__generic` member's struct: the parser refuses it)
    outer_params = set(p.scoped_type_names)  # the enclosing generic declarations' type parameters
    first = p.i
    inner = p.struct()
    for t in p.toks[first:p.i]:
        if t.kind == "ident" and t.text in outer_params and t.text not in inner.type_params:
            raise FrontendError(UNSUPPORTED, f"a nested struct that uses the enclosing struct's type parameter "
                                f"'{t.text}' is not supported", t.start, t.end)
    p.hoisted.append(inner)
    return []


FEATURE = Feature("nested structs", members={"struct": parse_nested_struct})
