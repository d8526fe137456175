"""The `diff` dialect: differential pairs and the operations of automatic differentiation.

Types
  !diff.pair<T>      a primal value of a differentiable type T with its derivative (Slang's
                     DifferentialPair<T>).
  !diff.ptr_pair<T>  a primal location T (a memref) together with the location its gradient is
                     accumulated into (Slang's DifferentialPtrPair).

Function-level facts are plain attributes, read through the helpers at the bottom of this file:
  diff.differentiable (unit, on func.func), diff.no_diff (unit, in arg/result attributes),
  diff.fwd_derivative = @g, diff.bwd_derivative = @h, diff.prefer = "recompute" | "checkpoint",
  diff.max_iters = N : i64 (on scf.for / scf.while).
  diff.abi = #diff.abi<...> (in arg attributes): a kernel parameter's role (dialects/abi.py).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence

from xdsl.dialects.builtin import (
    AnyFloat,
    DictionaryAttr,
    FlatSymbolRefAttrConstr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    IndexType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    param_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure, SymbolTable, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from diffc.dialects.abi import AbiRoleAttr, verify_roles

# Attribute names of the function-level facts.
DIFFERENTIABLE = "diff.differentiable"
NO_DIFF = "diff.no_diff"
FWD_DERIVATIVE = "diff.fwd_derivative"
BWD_DERIVATIVE = "diff.bwd_derivative"
# On @f: derivative code calls this function (same signature) wherever it would call f (Slang's
# [PrimalSubstitute]); plain calls of f still run f.
PRIMAL_SUBSTITUTE = "diff.primal_substitute"
PREFER = "diff.prefer"
MAX_ITERS = "diff.max_iters"
PREFER_VALUES = ("recompute", "checkpoint")

# The tape contract between diff-rev and diff-checkpoint (see passes/diff_checkpoint.py): attributes
# of this dialect that diff-rev sets and diff-checkpoint consumes and removes.
# On an op of the forward sweep that lies inside a region (branch or loop body): its id.
PRIMAL_ID = "diff.primal_id"
# On an op of the reverse sweep that recomputes the forward op with the same id.
RECOMPUTE = "diff.recompute"
# On every clone of a loop (forward, recomputed, reverse): the loop's id and its bound.
LOOP = "diff.loop"
TRIP = "diff.trip"
# On the op that computes the forward iteration number (0, 1, ...) inside a loop clone's body.
ITER = "diff.iter"
# On a memref.alloca that holds stored context: why ("loop-carried", "call", ...).
TAPE = "diff.tape"
# On a generated backward function: the function it differentiates.
BWD_OF = "diff.bwd_of"


class DifferentiableType:
    """Mixin for types of other dialects (structs, say) that carry derivatives.

    A type that inherits it may be the element of a `!diff.pair`; `differential_type()` names
    the type its derivative has (a struct's synthesized Differential)."""

    def differential_type(self) -> Attribute:
        return self  # type: ignore[return-value]


def is_float_type(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def is_differentiable_type(t: Attribute) -> bool:
    """Floats, vectors of floats, pairs (for higher order) and DifferentiableType types."""
    if is_float_type(t):
        return True
    if isinstance(t, VectorType):
        return is_float_type(t.element_type)
    if isinstance(t, PairType):
        return True
    return isinstance(t, DifferentiableType)


def differential_type(t: Attribute) -> Attribute:
    """The type of the derivative of a value of type `t`."""
    if isinstance(t, DifferentiableType):
        return t.differential_type()
    if isinstance(t, PairType):
        return PairType(differential_type(t.element_type))
    return t


@irdl_attr_definition
class PairType(ParametrizedAttribute, TypeAttribute):
    """DifferentialPair<T>: `!diff.pair<f32>`."""

    name = "diff.pair"
    element_type: Attribute = param_def()

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (parser.parse_type(),)

    def verify(self) -> None:
        if not is_differentiable_type(self.element_type):
            raise VerifyException(
                f"!diff.pair element type must be differentiable (a float, a vector of floats "
                f"or a differentiable struct), got {self.element_type}"
            )


@irdl_attr_definition
class PtrPairType(ParametrizedAttribute, TypeAttribute):
    """A primal location with its gradient location: `!diff.ptr_pair<memref<?xf32>>`."""

    name = "diff.ptr_pair"
    location_type: Attribute = param_def()

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.location_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (parser.parse_type(),)

    def verify(self) -> None:
        t = self.location_type
        if not isinstance(t, MemRefType) or not is_differentiable_type(t.element_type):
            raise VerifyException(
                f"!diff.ptr_pair location must be a memref of a differentiable element type, got {t}"
            )


def _pair_of(op: Operation, value: SSAValue, what: str) -> PairType:
    if not isinstance(value.type, PairType):
        raise VerifyException(f"'{op.name}' {what} must be a !diff.pair, got {value.type}")
    return value.type


def _parse_two_operands(
    parser: Parser, second_type: Callable[[Attribute], Attribute] = lambda t: t
) -> tuple[SSAValue, SSAValue, dict[str, Attribute]]:
    """The custom form `%a, %b {attrs} : T` shared by make_pair, add and make_ptr_pair:
    `%a` has type T, `%b` has type second_type(T)."""
    a = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    b = parser.parse_unresolved_operand()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    t = parser.parse_type()
    return parser.resolve_operand(a, t), parser.resolve_operand(b, second_type(t)), attrs


def _print_two_operands(printer: Printer, op: Operation) -> None:
    """Prints `%a, %b {attrs} : T`, T being the type of the first operand (for add, also the
    result's type: its verifier makes them equal)."""
    a, b = op.operands
    printer.print_string(" ")
    printer.print_operand(a)
    printer.print_string(", ")
    printer.print_operand(b)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(a.type)


def _parse_one_operand(cls, parser: Parser, want: type | None = None, what: str = ""):
    """`%x {attrs} : T`, the form of the diff ops with one operand; `want`: the type class the
    operand must have (`what` names it in the error)."""
    x = parser.parse_unresolved_operand()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    t = parser.parse_type()
    if want is not None and not isinstance(t, want):
        parser.raise_error(f"'{cls.name}' expects a {what} operand type, got {t}", pos, min(parser.pos, pos + len(str(t))))
    op = cls(parser.resolve_operand(x, t))
    op.attributes.update(attrs)
    return op


def _print_one_operand(op: Operation, operand: SSAValue, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_operand(operand)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(operand.type)


class _TwoOperandForm(IRDLOperation):
    """Shared custom form of make_pair, add and make_ptr_pair: `%a, %b {attrs} : T`, `%a` of
    type T and `%b` of type second_type(T)."""

    @staticmethod
    def second_type(t: Attribute) -> Attribute:
        return t

    @classmethod
    def parse(cls, parser: Parser):
        a, b, attrs = _parse_two_operands(parser, cls.second_type)
        op = cls(a, b)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        _print_two_operands(printer, self)


@irdl_op_definition
class MakePairOp(_TwoOperandForm):
    """diffPair(p, d): `%r = diff.make_pair %p, %d : f32`."""

    name = "diff.make_pair"
    primal = operand_def()
    differential = operand_def()
    result = result_def(PairType)
    traits = traits_def(Pure())

    def __init__(self, primal: SSAValue | Operation, differential: SSAValue | Operation):
        p = SSAValue.get(primal)
        super().__init__(operands=[p, differential], result_types=[PairType(p.type)])

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, PairType)
        if self.primal.type != t.element_type:
            raise VerifyException(
                f"'diff.make_pair' primal type {self.primal.type} does not match the pair's "
                f"element type {t.element_type}"
            )
        if self.differential.type != differential_type(t.element_type):
            raise VerifyException(
                f"'diff.make_pair' differential type {self.differential.type} does not match "
                f"the differential of the pair's element type {differential_type(t.element_type)}"
            )

    @staticmethod
    def second_type(t: Attribute) -> Attribute:
        return differential_type(t)


class _PairProjection(IRDLOperation):
    """Shared shape of diff.primal and diff.differential: `%p = diff.primal %x : !diff.pair<f32>`."""

    pair = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    @staticmethod
    def projected_type(pair_type: PairType) -> Attribute:
        raise NotImplementedError

    def __init__(self, pair: SSAValue | Operation):
        v = SSAValue.get(pair)
        assert isinstance(v.type, PairType)
        super().__init__(operands=[v], result_types=[self.projected_type(v.type)])

    def verify_(self) -> None:
        t = _pair_of(self, self.pair, "operand")
        expected = self.projected_type(t)
        if self.result.type != expected:
            raise VerifyException(
                f"'{self.name}' result type {self.result.type} does not match {expected}, "
                f"the {self.name.split('.')[1]} type of {t}"
            )

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_one_operand(cls, parser, PairType, "!diff.pair")

    def print(self, printer: Printer) -> None:
        _print_one_operand(self, self.pair, printer)


@irdl_op_definition
class PrimalOp(_PairProjection):
    """The primal half of a pair (`.p`)."""

    name = "diff.primal"

    @staticmethod
    def projected_type(pair_type: PairType) -> Attribute:
        return pair_type.element_type


@irdl_op_definition
class DifferentialOp(_PairProjection):
    """The derivative half of a pair (`.d`)."""

    name = "diff.differential"

    @staticmethod
    def projected_type(pair_type: PairType) -> Attribute:
        return differential_type(pair_type.element_type)


class _DerivativeCallVerifier(SymbolUserOpInterface):
    """fwd_diff / bwd_diff: the callee exists and the operands and results agree with the
    derivative signature of the callee (its no_diff marks included)."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, FwdDiffOp | BwdDiffOp)
        callee = SymbolTable.lookup_symbol(op, op.callee)
        if callee is None:
            raise VerifyException(
                f"'{op.name}' callee {op.callee} does not exist: no function of that name in "
                f"the enclosing module"
            )
        if not isinstance(callee, FuncOp):
            raise VerifyException(
                f"'{op.name}' callee {op.callee} is a '{callee.name}', not a func.func"
            )
        if isinstance(op, FwdDiffOp):
            expected = fwd_signature(callee)
            why_in, why_out = _fwd_reasons(callee)
        else:
            expected = bwd_signature(callee)
            why_in, why_out = _bwd_reasons(callee)
        check_call_types(op, op.callee, expected, op.args, op.res, why_in, why_out)


def _mark_reason(func: FuncOp, what: str, i: int, t: Attribute, differentiable: bool, marked: bool) -> str:
    name = func.sym_name.data
    if differentiable:
        return f"{what} {i} of @{name} is differentiable, so it is passed as a !diff.pair"
    if marked:
        return f"{what} {i} of @{name} is no_diff, so it is passed as its plain value"
    return f"{what} {i} of @{name} has the non-differentiable type {t}, so it is passed as its plain value"


def _fwd_reasons(func: FuncOp) -> tuple[list[str], list[str]]:
    ins = [
        _mark_reason(func, "parameter", i, t, arg_is_differentiable(func, i), NO_DIFF in _arg_attrs(func, i))
        for i, t in enumerate(func.function_type.inputs.data)
    ]
    outs = [
        _mark_reason(func, "result", i, t, result_is_differentiable(func, i), NO_DIFF in _res_attrs(func, i))
        for i, t in enumerate(func.function_type.outputs.data)
    ]
    return ins, outs


def _bwd_reasons(func: FuncOp) -> tuple[list[str], list[str]]:
    name = func.sym_name.data
    n_in = len(func.function_type.inputs.data)
    ins = [f"operand {i} is the primal value of parameter {i} of @{name}" for i in range(n_in)]
    ins += [
        f"operand {n_in + k} is the derivative of differentiable result {i} of @{name}"
        for k, i in enumerate(
            i for i in range(len(func.function_type.outputs.data)) if result_is_differentiable(func, i)
        )
    ]
    outs = [
        f"result {k} is the gradient of differentiable parameter {i} of @{name}"
        for k, i in enumerate(i for i in range(n_in) if arg_is_differentiable(func, i))
    ]
    return ins, outs


def _count_rule(op: Operation, callee: str, operands: bool) -> str:
    if op.name == "diff.fwd_diff":
        return (
            f"one per parameter of {callee}, a !diff.pair for each differentiable one"
            if operands
            else f"one per result of {callee}, a !diff.pair for each differentiable one"
        )
    if op.name == "diff.bwd_diff":
        return (
            f"the primal value of every parameter of {callee}, then one derivative per "
            f"differentiable result"
            if operands
            else f"one gradient per differentiable parameter of {callee}; no_diff parameters get none"
        )
    return f"as the derivative signature of {callee} says"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def check_call_types(
    op: Operation,
    callee: SymbolRefAttr,
    expected: FunctionType,
    args: Sequence[SSAValue],
    results: Sequence[SSAValue],
    why_in: Sequence[str] | None = None,
    why_out: Sequence[str] | None = None,
) -> None:
    """Operands and results of `op` against `expected`; `why_in` / `why_out` explain, per
    position, why that type is expected (they end up in the message)."""
    name = f"'{op.name}' of {callee}"
    want_in, want_out = expected.inputs.data, expected.outputs.data
    if len(args) != len(want_in):
        raise VerifyException(
            f"{name} expects {_plural(len(want_in), 'operand')} ({_count_rule(op, str(callee), True)}), got {len(args)}"
        )
    for i, (a, t) in enumerate(zip(args, want_in)):
        if a.type != t:
            why = f" ({why_in[i]})" if why_in and i < len(why_in) else ""
            raise VerifyException(f"{name}: operand {i} has type {a.type}, expected {t}{why}")
    if len(results) != len(want_out):
        raise VerifyException(
            f"{name} expects {_plural(len(want_out), 'result')} ({_count_rule(op, str(callee), False)}), got {len(results)}"
        )
    for i, (r, t) in enumerate(zip(results, want_out)):
        if r.type != t:
            why = f" ({why_out[i]})" if why_out and i < len(why_out) else ""
            raise VerifyException(f"{name}: result {i} has type {r.type}, expected {t}{why}")


@irdl_op_definition
class FwdDiffOp(IRDLOperation):
    """fwd_diff(f)(pairs...): `%r = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, ...) -> ...`."""

    name = "diff.fwd_diff"
    args = var_operand_def()
    callee = prop_def(FlatSymbolRefAttrConstr)
    res = var_result_def()
    traits = traits_def(_DerivativeCallVerifier())
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(self, callee: str | SymbolRefAttr, args: Sequence[SSAValue], result_types: Sequence[Attribute]):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(operands=[args], result_types=[result_types], properties={"callee": callee})


@irdl_op_definition
class BwdDiffOp(IRDLOperation):
    """bwd_diff(f)(primals..., douts...) -> gradients of the differentiable parameters."""

    name = "diff.bwd_diff"
    args = var_operand_def()
    callee = prop_def(FlatSymbolRefAttrConstr)
    res = var_result_def()
    traits = traits_def(_DerivativeCallVerifier())
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(self, callee: str | SymbolRefAttr, args: Sequence[SSAValue], result_types: Sequence[Attribute]):
        if isinstance(callee, str):
            callee = SymbolRefAttr(callee)
        super().__init__(operands=[args], result_types=[result_types], properties={"callee": callee})


@irdl_op_definition
class DetachOp(IRDLOperation):
    """detach(x): the same value, with a zero derivative: `%y = diff.detach %x : f32`."""

    name = "diff.detach"
    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: SSAValue | Operation):
        v = SSAValue.get(value)
        super().__init__(operands=[v], result_types=[v.type])

    def verify_(self) -> None:
        if self.result.type != self.input.type:
            raise VerifyException(
                f"'diff.detach' result type {self.result.type} must equal the operand type "
                f"{self.input.type}: detach keeps the value and drops only its derivative"
            )

    @classmethod
    def parse(cls, parser: Parser) -> DetachOp:
        return _parse_one_operand(cls, parser)

    def print(self, printer: Printer) -> None:
        _print_one_operand(self, self.input, printer)


@irdl_op_definition
class ZeroOp(IRDLOperation):
    """T.dzero(): the zero derivative of a type."""

    name = "diff.zero"
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, t: Attribute):
        super().__init__(result_types=[t])

    def verify_(self) -> None:
        if not is_differentiable_type(self.result.type):
            raise VerifyException(
                f"'diff.zero' result must be a differentiable type, got {self.result.type}"
            )


@irdl_op_definition
class AddOp(_TwoOperandForm):
    """T.dadd(a, b): the sum of two derivatives: `%s = diff.add %a, %b : f32`."""

    name = "diff.add"
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        a = SSAValue.get(lhs)
        super().__init__(operands=[a, rhs], result_types=[a.type])

    def verify_(self) -> None:
        t = self.result.type
        if self.lhs.type != t or self.rhs.type != t:
            raise VerifyException(
                f"'diff.add' operands and result must have one type, got "
                f"{self.lhs.type}, {self.rhs.type} -> {t}"
            )
        if not is_differentiable_type(t):
            raise VerifyException(
                f"'diff.add' operands must be of a differentiable type, got {t}"
            )


@irdl_op_definition
class MakePtrPairOp(_TwoOperandForm):
    """A differential pointer pair from a primal location and its gradient location."""

    name = "diff.make_ptr_pair"
    primal = operand_def()
    gradient = operand_def()
    result = result_def(PtrPairType)
    traits = traits_def(Pure())

    def __init__(self, primal: SSAValue | Operation, gradient: SSAValue | Operation):
        p = SSAValue.get(primal)
        super().__init__(operands=[p, gradient], result_types=[PtrPairType(p.type)])

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, PtrPairType)
        if self.primal.type != t.location_type:
            raise VerifyException(
                f"'diff.make_ptr_pair' primal location type {self.primal.type} does not match "
                f"the pair's location type {t.location_type}"
            )
        if self.gradient.type != t.location_type:
            raise VerifyException(
                f"'diff.make_ptr_pair' gradient location type {self.gradient.type} does not "
                f"match the pair's location type {t.location_type}"
            )


class _PtrPairLocation(IRDLOperation):
    """Shared shape of diff.ptr_primal and diff.ptr_gradient."""

    pair = operand_def()
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, pair: SSAValue | Operation):
        v = SSAValue.get(pair)
        assert isinstance(v.type, PtrPairType)
        super().__init__(operands=[v], result_types=[v.type.location_type])

    def verify_(self) -> None:
        t = self.pair.type
        if not isinstance(t, PtrPairType):
            raise VerifyException(f"'{self.name}' operand must be a !diff.ptr_pair, got {t}")
        if self.result.type != t.location_type:
            raise VerifyException(
                f"'{self.name}' result type {self.result.type} does not match {t.location_type}"
            )

    @classmethod
    def parse(cls, parser: Parser):
        return _parse_one_operand(cls, parser, PtrPairType, "!diff.ptr_pair")

    def print(self, printer: Printer) -> None:
        _print_one_operand(self, self.pair, printer)


@irdl_op_definition
class PtrPrimalOp(_PtrPairLocation):
    """The primal location of a pointer pair (`.p`)."""

    name = "diff.ptr_primal"


@irdl_op_definition
class PtrGradientOp(_PtrPairLocation):
    """The gradient location of a pointer pair (`.d`)."""

    name = "diff.ptr_gradient"


@irdl_op_definition
class AccumulateOp(IRDLOperation):
    """Atomically adds a gradient into the gradient location of a pointer pair:
    `diff.accumulate %g, %pp[%i] : !diff.ptr_pair<memref<?xf32>>`."""

    name = "diff.accumulate"
    value = operand_def()
    pair = operand_def()
    indices = var_operand_def()
    assembly_format = "$value `,` $pair `[` $indices `]` attr-dict `:` type($pair) `,` type($value) (`,` type($indices)^)?"

    def __init__(self, value: SSAValue | Operation, pair: SSAValue | Operation, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, pair, indices])

    def verify_(self) -> None:
        t = self.pair.type
        if not isinstance(t, PtrPairType):
            raise VerifyException(
                f"'diff.accumulate' accumulates into a !diff.ptr_pair, got {t}"
            )
        mem = t.location_type
        assert isinstance(mem, MemRefType)
        if self.value.type != mem.element_type:
            raise VerifyException(
                f"'diff.accumulate' value type {self.value.type} does not match the element "
                f"type {mem.element_type} of the gradient location"
            )
        if len(self.indices) != mem.get_num_dims():
            raise VerifyException(
                f"'diff.accumulate' takes one index per dimension of the gradient location: "
                f"{mem.get_num_dims()} for {mem}, got {len(self.indices)}"
            )
        for i, idx in enumerate(self.indices):
            if not isinstance(idx.type, IndexType):
                raise VerifyException(f"'diff.accumulate' index {i} must have type index, got {idx.type}")


Diff = Dialect(
    "diff",
    [
        MakePairOp,
        PrimalOp,
        DifferentialOp,
        FwdDiffOp,
        BwdDiffOp,
        DetachOp,
        ZeroOp,
        AddOp,
        MakePtrPairOp,
        PtrPrimalOp,
        PtrGradientOp,
        AccumulateOp,
    ],
    [PairType, PtrPairType, AbiRoleAttr],
)


# ---------------------------------------------------------------------------------------------
# Function-level facts and the derivative signatures they imply.


def _arg_attrs(func: FuncOp, i: int) -> dict[str, Attribute]:
    if func.arg_attrs is None:
        return {}
    d = func.arg_attrs.data[i]
    assert isinstance(d, DictionaryAttr)
    return dict(d.data)


def _res_attrs(func: FuncOp, i: int) -> dict[str, Attribute]:
    if func.res_attrs is None:
        return {}
    d = func.res_attrs.data[i]
    assert isinstance(d, DictionaryAttr)
    return dict(d.data)


def is_differentiable_func(func: FuncOp) -> bool:
    return DIFFERENTIABLE in func.attributes


def arg_is_differentiable(func: FuncOp, i: int) -> bool:
    """A parameter carries a derivative when its type is differentiable and it is not no_diff."""
    t = func.function_type.inputs.data[i]
    return is_differentiable_type(t) and NO_DIFF not in _arg_attrs(func, i)


def result_is_differentiable(func: FuncOp, i: int) -> bool:
    t = func.function_type.outputs.data[i]
    return is_differentiable_type(t) and NO_DIFF not in _res_attrs(func, i)


def fwd_signature(func: FuncOp) -> FunctionType:
    """fwd_diff(f): each differentiable parameter and result becomes a pair."""
    ins = [
        PairType(t) if arg_is_differentiable(func, i) else t
        for i, t in enumerate(func.function_type.inputs.data)
    ]
    outs = [
        PairType(t) if result_is_differentiable(func, i) else t
        for i, t in enumerate(func.function_type.outputs.data)
    ]
    return FunctionType.from_lists(ins, outs)


def bwd_signature(func: FuncOp) -> FunctionType:
    """bwd_diff(f): every primal parameter, then the derivative of each differentiable result;
    returns the gradient of each differentiable parameter."""
    ins = list(func.function_type.inputs.data)
    outs_t = func.function_type.outputs.data
    ins += [differential_type(t) for i, t in enumerate(outs_t) if result_is_differentiable(func, i)]
    grads = [
        differential_type(t)
        for i, t in enumerate(func.function_type.inputs.data)
        if arg_is_differentiable(func, i)
    ]
    return FunctionType.from_lists(ins, grads)


def fresh_symbol(base: str, taken: Container[str]) -> str:
    """`base`, or `base_1`, `base_2`, ... : the first that is not in `taken` (the name of a
    generated derivative function)."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def custom_derivative(func: FuncOp, kind: str) -> str | None:
    """The symbol of a user-given derivative (kind: FWD_DERIVATIVE or BWD_DERIVATIVE)."""
    attr = func.attributes.get(kind)
    if attr is None:
        return None
    assert isinstance(attr, SymbolRefAttr)
    return attr.root_reference.data


def prefer(func: FuncOp) -> str | None:
    attr = func.attributes.get(PREFER)
    return attr.data if isinstance(attr, StringAttr) else None


def max_iters(loop: Operation) -> int | None:
    attr = loop.attributes.get(MAX_ITERS)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


# The marks' value kinds (what diff-rev writes; verify_op_facts checks them on any op).
_MARK_KINDS: dict[str, tuple[type, str]] = {
    PRIMAL_ID: (IntegerAttr, "an integer id such as `3 : i64`"),
    RECOMPUTE: (IntegerAttr, "an integer id such as `3 : i64`"),
    LOOP: (IntegerAttr, "an integer loop id such as `3 : i64`"),
    TRIP: (IntegerAttr, "an integer bound such as `16 : i64`"),
    ITER: (IntegerAttr, "an integer loop id such as `3 : i64`"),
    TAPE: (StringAttr, "a string saying why the value is stored"),
    BWD_OF: (SymbolRefAttr, "a symbol reference such as @f"),
}


def tape_contract_problem(func: FuncOp) -> tuple[Operation, str] | None:
    """The first way the IR of one function breaks the tape contract between diff-rev and
    diff-checkpoint (a pass run between the two that dropped, duplicated or moved marks), as
    (op, message); None when it holds:
      * each diff.primal_id appears once, and each diff.recompute = K has its diff.primal_id = K
        in the same function;
      * each op with diff.loop also has diff.trip;
      * a block holds at most one diff.iter op per loop id, and only inside a clone of that loop."""
    forward: dict[int, Operation] = {}
    recomputes: list[tuple[int, Operation]] = []
    for op in func.walk():
        k = op.attributes.get(PRIMAL_ID)
        if isinstance(k, IntegerAttr):
            if k.value.data in forward:
                return op, f"{PRIMAL_ID} = {k.value.data} appears twice (an op of the forward sweep was duplicated)"
            forward[k.value.data] = op
        k = op.attributes.get(RECOMPUTE)
        if isinstance(k, IntegerAttr):
            recomputes.append((k.value.data, op))
        if LOOP in op.attributes and TRIP not in op.attributes:
            return op, f"has {LOOP} but no {TRIP}"
        it = op.attributes.get(ITER)
        if isinstance(it, IntegerAttr):
            block, parent = op.parent_block(), op.parent_op()
            loop = parent.attributes.get(LOOP) if parent is not None else None
            if not (isinstance(loop, IntegerAttr) and loop.value.data == it.value.data):
                return op, f"{ITER} = {it.value.data} outside a clone of loop {it.value.data}"
            assert block is not None
            same = [o for o in block.ops if o.attributes.get(ITER) == it]
            if len(same) > 1:
                return op, f"{ITER} = {it.value.data} appears twice in one block"
    for k, op in recomputes:
        if k not in forward:
            return op, f"{RECOMPUTE} = {k} has no op with {PRIMAL_ID} = {k} (the forward op was removed)"
    return None


def verify_op_facts(op: Operation) -> None:
    """Checks the diff.* attributes one op carries: on a func.func, well-formed facts and custom
    derivatives that exist and have the signature fwd_diff / bwd_diff of the function would
    have; on any op, a well-formed diff.max_iters and well-formed tape marks."""
    for key, (kind, what) in _MARK_KINDS.items():
        mark = op.attributes.get(key)
        if mark is not None and not isinstance(mark, kind):
            raise VerifyException(f"'{op.name}': {key} must be {what}, got {mark}")
    attr = op.attributes.get(MAX_ITERS)
    if attr is not None:
        if not (isinstance(attr, IntegerAttr) and isinstance(attr.type, IntegerType)):
            raise VerifyException(
                f"'{op.name}': {MAX_ITERS} must be an integer loop bound such as `16 : i64`, got {attr}"
            )
        if attr.value.data <= 0:
            raise VerifyException(
                f"'{op.name}': {MAX_ITERS} must be a positive iteration bound, got {attr.value.data}"
            )
    if not isinstance(op, FuncOp):
        return
    func = op
    name = func.sym_name.data
    verify_roles(func)  # the kernel ABI roles (dialects/abi.py)
    for key in (DIFFERENTIABLE,):
        attr = func.attributes.get(key)
        if attr is not None and not isinstance(attr, UnitAttr):
            raise VerifyException(f"'func.func' @{name}: {key} is a unit attribute, got {attr}")
    for what, attrs in (("parameter", func.arg_attrs), ("result", func.res_attrs)):
        for i, d in enumerate(attrs.data if attrs is not None else ()):
            assert isinstance(d, DictionaryAttr)
            mark = d.data.get(NO_DIFF)
            if mark is not None and not isinstance(mark, UnitAttr):
                raise VerifyException(
                    f"'func.func' @{name}: {NO_DIFF} on {what} {i} is a unit attribute, got {mark}"
                )
    attr = func.attributes.get(PREFER)
    if attr is not None and not (isinstance(attr, StringAttr) and attr.data in PREFER_VALUES):
        raise VerifyException(
            f"'func.func' @{name}: {PREFER} must be \"recompute\" or \"checkpoint\", got {attr}"
        )
    for kind, sig_of, mode in (
        (FWD_DERIVATIVE, fwd_signature, "fwd_diff"),
        (BWD_DERIVATIVE, bwd_signature, "bwd_diff"),
    ):
        attr = func.attributes.get(kind)
        if attr is None:
            continue
        if not isinstance(attr, SymbolRefAttr):
            raise VerifyException(f"'func.func' @{name}: {kind} must be a symbol reference such as @g, got {attr}")
        target = SymbolTable.lookup_symbol(func, attr)
        if target is None:
            raise VerifyException(
                f"'func.func' @{name}: {kind} names {attr}, which does not exist"
            )
        if not isinstance(target, FuncOp):
            raise VerifyException(
                f"'func.func' @{name}: {kind} names {attr}, which is a '{target.name}', not a func.func"
            )
        want = sig_of(func)
        if target.function_type != want:
            raise VerifyException(
                f"'func.func' @{name}: custom derivative {attr} ({kind}) has signature "
                f"{target.function_type}, but {mode} of @{name} has signature {want}"
            )


def verify_function_facts(module: ModuleOp) -> None:
    """Checks the diff.* attributes of every op in `module` (see verify_op_facts)."""
    for op in module.walk():
        verify_op_facts(op)
