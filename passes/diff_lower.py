"""diff-lower: removes every remaining `diff` type and op.

Types flatten: a `!diff.pair<T>` becomes its primal then its differential, each flattened in turn
(so a pair of pairs is four values), and a `!diff.ptr_pair<M>` becomes two locations (primal,
gradient). Every place a value can sit is rewritten alike: function signatures (args, results,
arg/res attributes), func.call, func.return, block arguments, and the operands and results of any
op with regions (scf.if / scf.for / scf.while), their yields and conditions.

Ops:
  diff.make_pair %p, %d  -> the values of %p then %d        diff.primal / diff.differential -> a slice
  diff.zero : T          -> arith.constant 0 (a splat for vectors), one per flattened value
  diff.add %a, %b        -> arith.addf, component-wise
  diff.detach %x         -> %x
  diff.make_ptr_pair / ptr_primal / ptr_gradient -> the locations
  diff.accumulate %g, %pp[%i] -> load, addf, store into the gradient location
Function attributes `diff.fwd_derivative` / `diff.bwd_derivative` are dropped (they name
signatures over pairs, which no longer exist); the derivative functions stay.
A `diff.fwd_diff` / `diff.bwd_diff` still present is an error: diff-fwd / diff-rev come first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Attribute, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from diffc.diagnostics import pass_error
from diffc.dialects.diff import (
    BWD_DERIVATIVE,
    FWD_DERIVATIVE,
    AccumulateOp,
    AddOp,
    BwdDiffOp,
    DetachOp,
    DifferentialOp,
    FwdDiffOp,
    MakePairOp,
    MakePtrPairOp,
    PairType,
    PrimalOp,
    PtrGradientOp,
    PtrPairType,
    PtrPrimalOp,
    ZeroOp,
    differential_type,
)


def flat_types(t: Attribute) -> list[Attribute]:
    """The plain types a value of type `t` becomes."""
    if isinstance(t, PairType):
        return flat_types(t.element_type) + flat_types(differential_type(t.element_type))
    if isinstance(t, PtrPairType):
        return [t.location_type, t.location_type]
    return [t]


def _has_diff_type(types: Sequence[Attribute]) -> bool:
    # (by exact type: isinstance on xDSL's attribute classes is an ABC check, and this asks it of
    # every operand and result in the module)
    return any(type(t) in _DIFF_TYPES for t in types)


_DIFF_TYPES = frozenset((PairType, PtrPairType))


def zero_constant(b: Builder, t: Attribute) -> SSAValue:
    if isinstance(t, VectorType):
        attr = DenseIntOrFPElementsAttr.from_list(t, [0.0] * t.element_count())
        return b.insert(arith.ConstantOp(attr, t)).result
    return b.insert(arith.ConstantOp(FloatAttr(0.0, t))).result


_DIFF_OPS = frozenset((MakePairOp, PrimalOp, DifferentialOp, DetachOp, ZeroOp, AddOp, MakePtrPairOp, PtrPrimalOp,
                       PtrGradientOp, AccumulateOp, FwdDiffOp, BwdDiffOp))


class Lowerer:
    """Lowers one top-level op in place: diff ops give way to the values they stand for (or to
    arith / memref ops inserted where they stood), an op whose operands hold pairs takes their
    flattened values, and an op whose results hold pairs is rebuilt around its own regions.
    The ops that need none of this (most of a differentiated function) are left as they are."""

    def __init__(self) -> None:
        self.vals: dict[SSAValue, list[SSAValue]] = {}
        self.fname = "<module>"
        self.dead_ops: list[Operation] = []  # replaced ops, erased last to first once all uses moved
        self.dead_args: list[BlockArgument] = []  # pair-typed block arguments, erased after them

    def fail(self, message: str, at: Operation) -> PassFailedException:
        return pass_error(at, f"in function @{self.fname}: {message}")

    def get(self, v: SSAValue) -> list[SSAValue]:
        return self.vals.get(v, [v])

    def get_all(self, values: Sequence[SSAValue]) -> list[SSAValue]:
        return [x for v in values for x in self.get(v)]

    def bind(self, old: SSAValue, new: list[SSAValue]) -> None:
        hint = old.name_hint
        if hint is not None:
            if len(new) == 1:
                if new[0].name_hint is None:
                    new[0].name_hint = hint
            elif len(new) == 2:
                for v, h in zip(new, (hint, f"{hint}_d")):
                    if v.name_hint is None:
                        v.name_hint = h
        if len(new) == 1 and new[0].type == old.type:
            old.replace_all_uses_with(new[0])  # a plain value: its uses take the new one now
        else:
            self.vals[old] = new

    def bind_results(self, olds: Sequence[SSAValue], news: Sequence[SSAValue]) -> None:
        k = 0
        for old in olds:
            n = len(flat_types(old.type))
            self.bind(old, list(news[k : k + n]))
            k += n
        assert k == len(news)

    def finish(self) -> None:
        for op in reversed(self.dead_ops):
            Rewriter.erase_op(op)
        for arg in self.dead_args:
            arg.block.erase_arg(arg)

    # -- regions ------------------------------------------------------------------------------

    def region(self, region: Region) -> None:
        for block in region.blocks:
            if _has_diff_type([a.type for a in block.args]):
                for arg in list(block.args):
                    if isinstance(arg.type, PairType | PtrPairType):
                        at = arg.index + 1
                        flat = [block.insert_arg(t, at + k) for k, t in enumerate(flat_types(arg.type))]
                        self.bind(arg, flat)
                        self.dead_args.append(arg)
        for block in region.blocks:
            for op in list(block.ops):
                self.op(op)

    # -- ops ----------------------------------------------------------------------------------

    def op(self, op: Operation) -> None:
        if type(op) not in _DIFF_OPS:
            return self.generic(op)
        if isinstance(op, MakePairOp):
            return self.replace(op, self.get(op.primal) + self.get(op.differential))
        if isinstance(op, PrimalOp | DifferentialOp):
            pair_t = op.pair.type
            assert isinstance(pair_t, PairType)
            n = len(flat_types(pair_t.element_type))
            parts = self.get(op.pair)
            return self.replace(op, parts[:n] if isinstance(op, PrimalOp) else parts[n:])
        if isinstance(op, DetachOp):
            return self.replace(op, self.get(op.input))
        b = Builder(InsertPoint.before(op))
        if isinstance(op, ZeroOp):
            return self.replace(op, [zero_constant(b, t) for t in flat_types(op.result.type)])
        if isinstance(op, AddOp):
            sums = [
                b.insert(arith.AddfOp(x, y)).result
                for x, y in zip(self.get(op.lhs), self.get(op.rhs), strict=True)
            ]
            return self.replace(op, sums)
        if isinstance(op, MakePtrPairOp):
            return self.replace(op, self.get(op.primal) + self.get(op.gradient))
        if isinstance(op, PtrPrimalOp):
            return self.replace(op, self.get(op.pair)[:1])
        if isinstance(op, PtrGradientOp):
            return self.replace(op, self.get(op.pair)[1:])
        if isinstance(op, AccumulateOp):
            grad = self.get(op.pair)[1]
            idx = self.get_all(op.indices)
            old = b.insert(memref.LoadOp.get(grad, idx)).res
            (value,) = self.get(op.value)
            new = b.insert(arith.AddfOp(old, value)).result
            b.insert(memref.StoreOp.get(new, grad, idx))
            self.dead_ops.append(op)
            return
        if isinstance(op, FwdDiffOp | BwdDiffOp):
            raise self.fail(
                f"'{op.name}' of {op.callee} is still present: run diff-fwd and diff-rev before diff-lower",
                op,
            )
        self.generic(op)

    def replace(self, op: Operation, values: list[SSAValue]) -> None:
        self.bind(op.results[0], values)
        self.dead_ops.append(op)

    def generic(self, op: Operation) -> None:
        if type(op) is func.FuncOp:
            self.fname = op.sym_name.data
        saved = self.fname
        for r in op.regions:
            self.region(r)
        self.fname = saved
        if type(op) is func.FuncOp:
            self.fix_function(op)
            # Custom-derivative links name signatures over pairs, which no longer exist.
            for key in (FWD_DERIVATIVE, BWD_DERIVATIVE):
                op.attributes.pop(key, None)
        if _has_diff_type([v.type for v in op.operands]):
            op.operands = self.get_all(op.operands)
        if not _has_diff_type([r.type for r in op.results]):
            return
        new = type(op).create(
            operands=list(op.operands),
            result_types=[t for r in op.results for t in flat_types(r.type)],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
            successors=list(op.successors),
            regions=[op.detach_region(0) for _ in range(len(op.regions))],
        )
        new.location = op.location  # later passes' errors still point at the source
        Rewriter.insert_op(new, InsertPoint.before(op))
        self.bind_results(list(op.results), list(new.results))
        self.dead_ops.append(op)

    @staticmethod
    def fix_function(op: func.FuncOp) -> None:
        ins = op.function_type.inputs.data
        outs = op.function_type.outputs.data
        if not _has_diff_type(ins) and not _has_diff_type(outs):
            return
        properties = op.properties
        properties["function_type"] = FunctionType.from_lists(
            [t for x in ins for t in flat_types(x)], [t for x in outs for t in flat_types(x)]
        )
        for key, types in (("arg_attrs", ins), ("res_attrs", outs)):
            attrs = properties.get(key)
            if isinstance(attrs, ArrayAttr):
                expanded: list[DictionaryAttr] = []
                for d, t in zip(attrs.data, types):
                    expanded += [d] * len(flat_types(t))
                properties[key] = ArrayAttr(expanded)


@dataclass(frozen=True)
class DiffLowerPass(ModulePass):
    """Pairs become plain values; diff ops become arith / memref ops."""

    name = "diff-lower"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for top in list(op.body.block.ops):
            lowerer = Lowerer()
            lowerer.op(top)
            lowerer.finish()
