"""The Differential of an IDifferentiable struct: synthesized from its differentiable fields, or
the one it declares (`typealias Differential = D;`, `typedef D Differential;`).

diffc represents a derivative of struct S as one leaf per derivative-carrying leaf of S, in
field order (types.make_differential_struct). A declared D is accepted where its fields are
exactly those leaves in that order: D then *is* that representation, so `DifferentialPair<S>.d`,
`diffPair(p, d)`, `S.Differential` and the derivatives' signatures take D's values as they are,
with no conversion. The two forms:

 (a) D is S itself (also `MyVec<T>` inside `MyVec<T>`): each field holds its own derivative, so
     every field must carry one.
 (b) D is another struct: the field of D that holds the derivative of S's field f is the one
     `[DerivativeMember(Differential.g)]` on f names (when any field is marked, the unmarked ones
     carry no derivative), else the field of D named f. D must hold those, in S's order, each of
     the Differential type of its field, and nothing else.

A declared D decides which fields carry derivatives: a field declared as a type parameter without
a differentiable interface (`no_diff` by interfaces.mark_nondiff_generic_values) carries one when
D holds it, as the program says where its derivative lives. A D that does not map is a located
error saying why: E0008 for forms Slang accepts (extra fields, another order, ...), E0003 / E0004
for those it refuses too."""

from __future__ import annotations

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import TYPE_MISMATCH, UNDEFINED, UNKNOWN_MEMBER, UNSUPPORTED
from diffc.frontend.checker.interfaces import GENERIC_NO_DIFF
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature


def settle_differential(d: A.Struct, s: T.Struct) -> None:
    """Sets s.diff_struct (None when s is not IDifferentiable) and, for a declared Differential,
    which of s's fields carry derivatives; `Differential` then names it inside s."""
    alias = next((a for a in d.aliases if a.name == "Differential"), None)
    marked = [f for f in d.fields if f.derivative_member and "static" not in f.mods]
    if alias is None and marked:
        f = marked[0]
        raise err(UNDEFINED, f"[DerivativeMember] on field '{f.name}' of '{s.sname}' names a field of the "
                  "struct's own Differential type, which it does not declare (typealias Differential = ...;)",
                  f.derivative_member[1])
    own = s.aliases.get("Differential") if alias is not None else None
    if not s.differentiable or own is None:
        s.diff_struct = T.make_differential_struct(s) if s.differentiable else None
    elif own is s:
        _own_differential(d, s, alias)
    elif isinstance(own, T.Struct):
        _other_differential(d, s, own, alias, marked)
    else:
        raise err(UNSUPPORTED, f"Differential type {own} of '{s.sname}' is not supported: the Differential "
                  "of a struct must be a struct (itself, or one holding its fields' derivatives)", alias)
    if s.diff_struct is not None:
        s.aliases.setdefault("Differential", s.diff_struct)


def _carry(s: T.Struct, d: A.Struct, held: set[str]) -> None:
    """Fields named in `held` carry a derivative even where only the generic rule made them
    `no_diff`; a `no_diff` the program wrote stays."""
    mods = {f.name: f.mods for f in d.fields if "static" not in f.mods}
    s.fields = [(n, t, nd and not (n in held and GENERIC_NO_DIFF in mods.get(n, ())))
                for n, t, nd in s.fields]


def _own_differential(d: A.Struct, s: T.Struct, alias: A.Node) -> None:
    """Form (a): S is its own Differential, so each field must be its own derivative."""
    moved = next((f for f in d.fields if f.derivative_member and f.derivative_member[0] != f.name), None)
    if moved is not None:
        raise err(UNSUPPORTED, f"[DerivativeMember] on field '{moved.name}' names field "
                  f"'{moved.derivative_member[0]}' of its own struct; only the field itself is supported",
                  moved.derivative_member[1])
    _carry(s, d, {n for n, _, _ in s.fields})
    for n, t, nd in s.fields:
        why = ("is no_diff" if nd else "is not differentiable" if not T.is_differentiable(t)
               else None if T.leaves(t) == T.leaves(T.differential(t)) and all(c for _, c in T.leaves(t))
               else f"has a Differential ({T.differential(t)}) of another layout")
        if why is not None:
            raise err(UNSUPPORTED, f"'{s.sname}' as its own Differential is not supported: its field '{n}' "
                      f"({t}) {why}, so it cannot hold that field's derivative", alias)
    s.diff_struct = s  # the derivative has the struct's methods too


def _other_differential(d: A.Struct, s: T.Struct, own: T.Struct, alias: A.Node, marked: list[A.Field]) -> None:
    """Form (b): D is another struct; each carried field's derivative goes to one field of D."""
    if not T.is_differentiable(own):
        raise err(TYPE_MISMATCH, f"Differential type {own} of '{s.sname}' must be IDifferentiable", alias)
    names = [n for n, _, _ in own.fields]
    decls = {f.name: f for f in d.fields if "static" not in f.mods}
    if marked:  # the marks decide; an unmarked field carries no derivative
        member = {f.name: f.derivative_member[0] for f in marked}
        for f in marked:
            if f.derivative_member[0] not in names:
                raise err(UNKNOWN_MEMBER, f"[DerivativeMember] on field '{f.name}' of '{s.sname}': its "
                          f"Differential {own} has no field '{f.derivative_member[0]}'", f.derivative_member[1])
    else:  # by name, as Slang matches them (and refuses a differentiable field D has no place for)
        member = {n: n for n, _, _ in s.fields if n in names}
    _carry(s, d, set(member))
    s.fields = [(n, t, nd or n not in member) for n, t, nd in s.fields]
    if not marked:
        for n, t, _ in s.fields:
            if n not in member and "no_diff" not in decls[n].mods and T.is_differentiable(t):
                raise err(TYPE_MISMATCH, f"differentiable field '{n}' of '{s.sname}' has no field in its Differential "
                          f"{own} to hold its derivative (none is named '{n}'): name one with "
                          "[DerivativeMember(Differential.f)] or make the field no_diff", decls[n])
    carried = [n for n, t, nd in s.fields if not nd and T.is_differentiable(t)]
    holder: dict[str, str] = {}
    for n in carried:
        g, at = member[n], decls[n].derivative_member[1] if decls[n].derivative_member else decls[n]
        if g in holder:
            raise err(UNSUPPORTED, f"fields '{holder[g]}' and '{n}' of '{s.sname}' both name field '{g}' of its "
                      f"Differential {own}: one field cannot hold two derivatives", at)
        holder[g] = n
        want, (_, got, got_no_diff) = T.differential(s.field(n)[1]), own.field(g)  # type: ignore[index,misc]
        if got_no_diff:
            raise err(UNSUPPORTED, f"field '{g}' of Differential {own} is no_diff, so it cannot hold the "
                      f"derivative of field '{n}' of '{s.sname}'", at)
        if not _same_type(want, got):
            raise err(UNSUPPORTED, f"field '{g}' of Differential {own} is {got}, but the derivative of field "
                      f"'{n}' of '{s.sname}' is {want}: a Differential field of another type is not supported", at)
    extra = next((g for g in names if g not in holder), None)
    if extra is not None:
        src = next((n for n in member if member[n] == extra), None)
        why = f" (field '{src}' of '{s.sname}', which names it, carries no derivative)" if src else ""
        raise err(UNSUPPORTED, f"Differential type {own} of '{s.sname}' has field '{extra}', which holds no "
                  f"field's derivative{why}; a Differential with such fields is not supported", alias)
    need = [member[n] for n in carried]
    if need != names:
        want = ", ".join(f"{T.differential(s.field(n)[1])} {member[n]}" for n in carried)  # type: ignore[index]
        raise err(UNSUPPORTED, f"Differential type {own} of '{s.sname}' must hold its fields' derivatives in "
                  f"the order of those fields ({want}); another order is not supported", alias)
    s.diff_struct = own  # its fields are the carried leaves in order: the representation itself


def _same_type(want: T.Type, got: T.Type) -> bool:
    """A field of D may be the Differential type itself or one that converts into it with the
    same leaves (a struct and its synthesized Differential, also as array elements)."""
    return want == got or T.leaf_types(want) == T.leaf_types(got) and T.convertible(got, want)


FEATURE = Feature("declared differentials", declare_struct=lambda c, d, s: settle_differential(d, s))
