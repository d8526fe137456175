"""Common subexpression elimination in linear time: what xDSL's `cse` does, op for op.

xDSL's CSE keys its table of known ops by a hash that leaves regions out, and copies the whole
table at every region it enters; every `scf.if %c` of a kernel then collides with every earlier
one on the same condition and is compared with it op by op, and a kernel of a few thousand ops
with a few hundred branches costs seconds a call (merge-calls calls it after each round of
inlining). Here the table is one dictionary whose entries a region sets are put back when the
region ends (a region sees its parents' entries without copying them, and a lookup is one hash
whatever the depth) and an op with regions is compared structurally only with earlier ops of the same
key whose regions have the same shape (their ops, attributes and operands as one value).

What an op's type tells (whether it is a terminator, whether it has no effects whatever its
operands, which is what deadness and purity come to for an op without regions) is looked up once
per type, not per op: xDSL searches the op's trait list for each question.

The result is xDSL's: the same ops are replaced (pure ones by an equal earlier one in scope; ops
that only read by an equal earlier one in the same block with no write between), the same dead
ops erased, nothing inside a region of several blocks or past an op isolated from above.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region
from xdsl.rewriter import Rewriter
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    NoMemoryEffect,
    is_side_effect_free,
    only_has_effect,
)
from xdsl.transforms.common_subexpression_elimination import has_other_side_effecting_op_in_between
from xdsl.transforms.dead_code_elimination import is_trivially_dead, would_be_trivially_dead


_NO_ITEMS: frozenset = frozenset()


def _key(op: Operation) -> tuple | None:
    """What two ops must share to be equal, regions aside; None when an attribute cannot be hashed.
    Operands by their id (hashing an SSA value is a call into Python): every value stays alive
    during CSE, the ops it erases included, so no id is reused."""
    try:
        return (op.name, frozenset(op.attributes.items()) if op.attributes else _NO_ITEMS,
                frozenset(op.properties.items()) if op.properties else _NO_ITEMS,
                tuple(r.type for r in op.results), tuple(map(id, op.operands)), len(op.regions))
    except TypeError:
        return None


class _OpType:
    """What CSE asks of an op, by its type: a terminator; pure (no effects whatever its operands,
    and no regions whose ops would count) or None: ask the op."""

    __slots__ = ("terminator", "pure", "removable")

    def __init__(self, op: Operation):
        self.terminator = op.has_trait(IsTerminator)
        effects = op.get_traits_of_type(MemoryEffect)
        self.pure: bool | None = True if len(effects) == 1 and isinstance(effects[0], NoMemoryEffect) else None
        self.removable = bool(self.pure) and would_be_trivially_dead(op)  # dead once unused (not a symbol)


_OP_TYPES: dict[type, _OpType] = {}


def pure_by_type(op: Operation) -> bool:
    """Whether `op`'s type says it has no effects at all (its one memory-effect trait is "none"),
    whatever its operands: is_side_effect_free without searching the op's traits each time."""
    kind = _OP_TYPES.get(type(op))
    if kind is None:
        kind = _OP_TYPES[type(op)] = _OpType(op)
    return bool(kind.pure)


class _Driver:
    def __init__(self) -> None:
        # the known ops in scope, by key: one table, whose entries a region sets are put back
        # (from `undo`) when it ends, so a lookup is one hash whatever the depth
        self.known: dict[tuple, list[Operation]] = {}
        self.undo: list[tuple[tuple, list[Operation] | None]] = []
        self.to_erase: list[Operation] = []
        self.shapes: dict[Operation, tuple] = {}

    def shape(self, op: Operation) -> tuple:
        """What structural equivalence compares, as a value: each nested op's name, attributes,
        properties and operands (a value defined inside `op` by its place, one from outside by
        itself); ops whose regions are equivalent have equal shapes."""
        s = self.shapes.get(op)
        if s is None:
            inside: dict = {}
            parts = []
            for o in op.walk():
                if o is not op:
                    parts.append((o.name, frozenset(o.attributes.items()), frozenset(o.properties.items()),
                                  tuple(inside.get(v, id(v)) for v in o.operands), len(o.regions)))
                for r in o.regions:
                    for b in r.blocks:
                        parts.append(("^", b.arg_types))
                        for a in b.args:
                            inside[a] = -1 - len(inside)  # negative: never an id
                for v in o.results:
                    inside[v] = -1 - len(inside)
            s = self.shapes[op] = tuple(parts)
        return s

    def find(self, op: Operation, key: tuple) -> Operation | None:
        """The op in scope equal to `op` (the latest one entered, as a table keyed by equality holds)."""
        candidates = self.known.get(key, ())
        if not op.regions:
            return candidates[-1] if candidates else None
        for other in reversed(candidates):
            if self.equal(op, other):
                return other
        return None

    def remember(self, op: Operation, key: tuple) -> None:
        entries = self.known.get(key)
        self.undo.append((key, entries))
        if op.regions and entries:
            # an equal op (one that only reads, out of reach) is replaced, as in a table keyed by equality
            self.known[key] = [e for e in entries if not self.equal(op, e)] + [op]
        else:
            self.known[key] = [op]

    def equal(self, op: Operation, other: Operation) -> bool:
        try:
            if self.shape(other) != self.shape(op):
                return False
        except TypeError:  # an attribute that cannot be hashed: compare the regions themselves
            pass
        return all(r.is_structurally_equivalent(o) for r, o in zip(op.regions, other.regions, strict=True))

    def replace(self, op: Operation, existing: Operation) -> None:
        for old, new in zip(op.results, existing.results, strict=True):
            old.replace_all_uses_with(new)
        self.to_erase.append(op)

    def operation(self, op: Operation) -> None:
        kind = _OP_TYPES.get(type(op))
        if kind is None:
            kind = _OP_TYPES[type(op)] = _OpType(op)
        if kind.terminator:
            return
        pure = kind.pure if not op.regions else None
        if pure and kind.removable:
            if all(r.first_use is None for r in op.results):  # is_trivially_dead, asked of the type
                self.to_erase.append(op)
                return
        elif is_trivially_dead(op):
            self.to_erase.append(op)
            return
        if any(len(region.blocks) > 1 for region in op.regions):
            return
        reads = not pure and not is_side_effect_free(op)
        if reads and not only_has_effect(op, MemoryEffectKind.READ):
            return
        key = _key(op)
        if key is None:
            return
        if op.regions:
            try:  # ops of another shape are never equal: they need not share a list of candidates
                key = (*key, hash(self.shape(op)))
            except TypeError:
                pass
        if reads:
            existing = self.find(op, key)
            if (existing is not None and op.parent_block() is existing.parent_block()
                    and not has_other_side_effecting_op_in_between(existing, op)):
                self.replace(op, existing)
                return
            self.remember(op, key)
            return
        existing = self.find(op, key)
        if existing is not None:
            self.replace(op, existing)
            return
        self.remember(op, key)

    def block(self, block: Block) -> None:
        for op in block.ops:
            if op.regions:
                if op.has_trait(IsolatedFromAbove, value_if_unregistered=True):
                    outer, self.known = self.known, {}
                    for region in op.regions:
                        self.region(region)
                    self.known = outer
                else:
                    for region in op.regions:
                        self.region(region)
            self.operation(op)

    def region(self, region: Region) -> None:
        if len(region.blocks) != 1:
            return
        outer, self.undo = self.undo, []
        self.block(region.block)
        known = self.known
        for key, entries in reversed(self.undo):
            if entries is None:
                del known[key]
            else:
                known[key] = entries
        self.undo = outer


def cse(thing: Operation | Block | Region) -> None:
    """Eliminates common subexpressions and dead ops in `thing` (an op's regions, a block or a
    region), in place, as xDSL's `cse` does."""
    driver = _Driver()
    if isinstance(thing, Operation):
        for region in thing.regions:
            driver.region(region)
    elif isinstance(thing, Block):
        driver.block(thing)
    else:
        driver.region(thing)
    rewriter = Rewriter()
    for op in dict.fromkeys(driver.to_erase):
        if op.parent is not None:
            rewriter.erase_op(op)
