"""Common subexpression elimination in linear time: what xDSL's `cse` does, op for op.

xDSL's CSE keys its table of known ops by a hash that leaves regions out, and copies the whole
table at every region it enters; every `scf.if %c` of a kernel then collides with every earlier
one on the same condition and is compared with it op by op, and a kernel of a few thousand ops
with a few hundred branches costs seconds a call (merge-calls calls it after each round of
inlining). Here the table is a chain of scopes (a region sees its parents' entries without
copying them) and an op with regions is compared structurally only with earlier ops of the same
key whose regions have the same shape (their ops, attributes and operands as one value).

The result is xDSL's: the same ops are replaced (pure ones by an equal earlier one in scope; ops
that only read by an equal earlier one in the same block with no write between), the same dead
ops erased, nothing inside a region of several blocks or past an op isolated from above.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove, IsTerminator, MemoryEffectKind, is_side_effect_free, only_has_effect
from xdsl.transforms.common_subexpression_elimination import has_other_side_effecting_op_in_between
from xdsl.transforms.dead_code_elimination import is_trivially_dead


def _key(op: Operation) -> tuple | None:
    """What two ops must share to be equal, regions aside; None when an attribute cannot be hashed."""
    try:
        return (op.name, frozenset(op.attributes.items()), frozenset(op.properties.items()), op.result_types,
                tuple(op.operands), len(op.regions))
    except TypeError:
        return None


class _Scope:
    """Known ops of one region, over its parent's."""

    __slots__ = ("known", "parent")

    def __init__(self, parent: _Scope | None):
        self.known: dict[tuple, list[Operation]] = {}
        self.parent = parent

    def lookup(self, key: tuple) -> list[Operation]:
        scope: _Scope | None = self
        while scope is not None:
            found = scope.known.get(key)
            if found is not None:
                return found
            scope = scope.parent
        return []


class _Driver:
    def __init__(self) -> None:
        self.scope = _Scope(None)
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
                                  tuple(inside.get(v, v) for v in o.operands), len(o.regions)))
                for r in o.regions:
                    for b in r.blocks:
                        parts.append(("^", b.arg_types))
                        for a in b.args:
                            inside[a] = len(inside)
                for v in o.results:
                    inside[v] = len(inside)
            s = self.shapes[op] = tuple(parts)
        return s

    def find(self, op: Operation, key: tuple) -> Operation | None:
        """The op in scope equal to `op` (the latest one entered, as a table keyed by equality holds)."""
        candidates = self.scope.lookup(key)
        if not op.regions:
            return candidates[-1] if candidates else None
        for other in reversed(candidates):
            if self.equal(op, other):
                return other
        return None

    def remember(self, op: Operation, key: tuple) -> None:
        entries = self.scope.known.get(key)
        if entries is None:
            # a region starts from its parents' entries (xDSL copies them into the region's table)
            inherited = self.scope.parent.lookup(key) if self.scope.parent is not None else []
            entries = self.scope.known[key] = list(inherited)
        if op.regions:
            # an equal op (one that only reads, out of reach) is replaced, as in a table keyed by equality
            entries[:] = [e for e in entries if not self.equal(op, e)]
        else:
            entries.clear()
        entries.append(op)

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
        if op.has_trait(IsTerminator):
            return
        if is_trivially_dead(op):
            self.to_erase.append(op)
            return
        if any(len(region.blocks) > 1 for region in op.regions):
            return
        key = _key(op)
        if key is None:
            return
        if op.regions:
            try:  # ops of another shape are never equal: they need not share a list of candidates
                key = (*key, hash(self.shape(op)))
            except TypeError:
                pass
        if not is_side_effect_free(op):
            if not only_has_effect(op, MemoryEffectKind.READ):
                return
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
                    outer, self.scope = self.scope, _Scope(None)
                    for region in op.regions:
                        self.region(region)
                    self.scope = outer
                else:
                    for region in op.regions:
                        self.region(region)
            self.operation(op)

    def region(self, region: Region) -> None:
        if len(region.blocks) != 1:
            return
        outer, self.scope = self.scope, _Scope(self.scope)
        self.block(region.block)
        self.scope = outer


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
