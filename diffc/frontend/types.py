"""Semantic types of the Slang subset and how each maps to IR values.

A value of any type is lowered to a flat list of SSA values, its *leaves*: a scalar or vector is
one leaf, an array of N elements N times its element's leaves, a struct the concatenation of its
fields' leaves, `DifferentialPair<T>` one `!diff.pair` per leaf of T that carries a derivative
(plain values for the others). So the IR needs no struct type."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    VectorType,
    DYNAMIC_INDEX,
)
from xdsl.ir import Attribute

from diffc.dialects.diff import PairType
from diffc.dialects.kernel import local_memref


class Type:
    def __str__(self) -> str:
        return self.name()  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Scalar(Type):
    kind: str  # float half double bool, or an integer kind of INT_KINDS (int, uint, int16_t, ...)

    def name(self) -> str:
        return self.kind


@dataclass(frozen=True)
class Vector(Type):
    elem: Scalar
    n: int

    def name(self) -> str:
        return f"{self.elem.kind}{self.n}"


@dataclass(frozen=True)
class Matrix(Type):
    """`floatRxC` / `matrix<float, R, C>`: R rows of C elements, laid out as its rows (an Array
    of R row vectors, a row of one column being a scalar), row-major in memory."""

    elem: Scalar
    rows: int
    cols: int

    def name(self) -> str:
        return f"{self.elem.kind}{self.rows}x{self.cols}"

    @property
    def row(self) -> Type:
        return Vector(self.elem, self.cols) if self.cols > 1 else self.elem

    def as_rows(self) -> Array:
        return Array(self.row, self.rows)


@dataclass(frozen=True)
class Array(Type):
    elem: Type
    n: int

    def name(self) -> str:
        return f"{self.elem}[{self.n}]"


@dataclass(eq=False)
class Struct(Type):
    sname: str
    fields: list[tuple[str, Type, bool]] = field(default_factory=list)  # name, type, no_diff
    differentiable: bool = False
    diff_struct: Struct | None = None  # the synthesized Differential
    methods: dict[str, str] = field(default_factory=dict)  # method name -> its function's name
    statics: dict[str, object] = field(default_factory=dict)  # `static const` field -> checker Local
    aliases: dict[str, Type] = field(default_factory=dict)  # `typealias` inside the struct
    template: tuple[str, tuple] | None = None  # generic struct and the arguments (ints, types) it instantiates
    # `: IDifferentiablePtrType`: its `typealias Differential` (a struct that is its own Differential).
    # Such a value carries no SSA derivative; derivatives are written through the Differential's pointers.
    ptr_differential: Struct | None = None
    conformances: list[str] = field(default_factory=list)  # the interfaces it names (interfaces.py)
    method_templates: dict[str, object] = field(default_factory=dict)  # generic methods: name -> ast.Func
    dynamic_of: str | None = None  # the interface whose tagged union this is (dynamic.py)
    union_tags: list[int] = field(default_factory=list)  # that union's tag of each field after __tag
    any_value_words: int | None = None  # that interface's [anyValueSize] in words (dynamic_buffers.py)
    optional_of: Type | None = None  # `Optional<T>` (optional.py): fields hasValue, value
    optional_diff_of: Struct | None = None  # the Differential of that Optional (its value's only)
    field_defaults: dict[str, object] = field(default_factory=dict)  # field -> its default value (ast; field_defaults.py)

    def name(self) -> str:
        return self.sname

    def field(self, name: str) -> tuple[int, Type, bool] | None:
        for i, (n, t, nd) in enumerate(self.fields):
            if n == name:
                return i, t, nd
        return None


@dataclass(frozen=True)
class Pair(Type):
    elem: Type

    def name(self) -> str:
        return f"DifferentialPair<{self.elem}>"


@dataclass(frozen=True)
class PtrPair(Type):
    """`DifferentialPtrPair<T>` of an IDifferentiablePtrType T: T's leaves (`.p`), then those of
    T.Differential (`.d`); none carries a derivative."""

    elem: Type

    def name(self) -> str:
        return f"DifferentialPtrPair<{self.elem}>"


@dataclass(frozen=True)
class Pointer(Type):
    """`T*`: a memref of T's scalar element type and an index offset counted in those scalars.
    A pointer to a struct that holds pointers (which cannot live in device memory) is that struct
    passed by value: its leaves are the struct's."""

    elem: Type
    atomic: bool = False  # `Atomic<T>*`
    space: str = ""  # "groupshared": into work-group memory (a memref in memory space 3)

    def name(self) -> str:
        if self.space:
            return f"Ptr<{self.elem}, Access::ReadWrite, AddressSpace::GroupShared>"
        inner = f"Atomic<{self.elem}>" if self.atomic else str(self.elem)
        return f"{inner}*"

    @property
    def by_value(self) -> bool:
        return holds_pointer(self.elem)


@dataclass(frozen=True)
class Buffer(Type):
    elem: Type
    atomic: bool = False

    def name(self) -> str:
        inner = f"Atomic<{self.elem}>" if self.atomic else str(self.elem)
        return f"RWStructuredBuffer<{inner}>"


@dataclass(frozen=True)
class Texture(Type):
    """`Texture2D<T>` / `RWTexture2D<T>` (frontend/features/textures.py): three leaves, a memref of T's
    scalars (texels row-major, a texel's components consecutive), then the width and the height
    (i32)."""

    elem: Type  # a scalar or vector of float, int or uint
    rw: bool = False

    def name(self) -> str:
        return f"{'RW' if self.rw else ''}Texture2D<{self.elem}>"


@dataclass(frozen=True)
class Sampler(Type):
    """`SamplerState`: no value of its own (the one filter modelled is frontend/features/textures.py's)."""

    def name(self) -> str:
        return "SamplerState"


@dataclass(frozen=True)
class Null(Type):
    """`none` or `nullptr` (optional.py): no value of its own; it takes the Optional or pointer
    type its context wants."""

    word: str

    def name(self) -> str:
        return self.word


@dataclass(frozen=True)
class Void(Type):
    def name(self) -> str:
        return "void"


@dataclass(frozen=True)
class NativeStr(Type):
    """Slang's `NativeString`: one of the program's string literals, as its number among them
    (frontend/features/native_strings.py); one i32 leaf."""

    def name(self) -> str:
        return "NativeString"


@dataclass(frozen=True)
class StringT(Type):
    def name(self) -> str:
        return "string"


@dataclass(frozen=True)
class FuncRef(Type):
    """`f` or `fwd_diff(f)` used as a callee: `mode` is "" or a chain like "fwd", "bwd"."""

    func: str
    mode: tuple[str, ...] = ()

    def name(self) -> str:
        s = self.func
        for m in self.mode:
            s = f"{m}_diff({s})"
        return s


@dataclass(frozen=True)
class BuiltinRef(Type):
    """An intrinsic used as a function, `fwd_diff(sin)`: it gets its instance (a FuncRef) when
    called, from the argument types (frontend/checker/builtin_types.py)."""

    builtin: str
    mode: tuple[str, ...] = ()

    def name(self) -> str:
        s = self.builtin
        for m in self.mode:
            s = f"{m}_diff({s})"
        return s


FLOAT, HALF, DOUBLE = Scalar("float"), Scalar("half"), Scalar("double")
INT, UINT, BOOL = Scalar("int"), Scalar("uint"), Scalar("bool")
VOID = Void()
NATIVE_STRING = NativeStr()
NONE, NULLPTR = Null("none"), Null("nullptr")


@dataclass(frozen=True)
class ByteBuffer(Buffer):
    """`ByteAddressBuffer` / `RWByteAddressBuffer` (features/byte_address_buffers.py): memory of
    bytes with no element type (elem is void), a `memref<?xi8>` addressed by byte offsets; what
    is read there is said by each access (`Load<half>(at)`, a CoopVec operation's component type)."""

    elem: Type = VOID
    rw: bool = True

    def name(self) -> str:
        return "RWByteAddressBuffer" if self.rw else "ByteAddressBuffer"
# Integer kinds: (bits, signed). `int` and `uint` are Slang's 32-bit ones; the others keep their
# Slang spelling, so that types print as the program wrote them (`int16_t`, `uint64_t2`).
INT_KINDS = {"int8_t": (8, True), "uint8_t": (8, False), "int16_t": (16, True), "uint16_t": (16, False),
             "int": (32, True), "uint": (32, False), "int64_t": (64, True), "uint64_t": (64, False)}
# Promotion order: an operator converts both operands to the higher-ranked element type.
RANK = {"bool": 0, "int8_t": 1, "uint8_t": 2, "int16_t": 3, "uint16_t": 4, "int": 5, "uint": 6,
        "int64_t": 7, "uint64_t": 8, "half": 9, "float": 10, "double": 11}


def is_float_scalar(t: Type) -> bool:
    return isinstance(t, Scalar) and t.kind in ("float", "half", "double")


def is_int_scalar(t: Type) -> bool:
    """An integer scalar of any width (not bool)."""
    return isinstance(t, Scalar) and t.kind in INT_KINDS


def is_unsigned(s: Scalar) -> bool:
    """Compared, divided and widened as unsigned: the unsigned integers and bool."""
    return s.kind == "bool" or s.kind in INT_KINDS and not INT_KINDS[s.kind][1]


def int_bits(s: Scalar) -> int:
    return 1 if s.kind == "bool" else INT_KINDS[s.kind][0]


def int_range(s: Scalar) -> tuple[int, int]:
    """The smallest and largest value of an integer scalar type."""
    bits, signed = INT_KINDS[s.kind]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def elem_of(t: Type) -> Scalar | None:
    if isinstance(t, Scalar):
        return t
    if isinstance(t, Vector):
        return t.elem
    return None


def is_numeric(t: Type) -> bool:
    return isinstance(t, Scalar | Vector)


def is_floating(t: Type) -> bool:
    e = elem_of(t)
    return e is not None and is_float_scalar(e)


def with_elem(t: Type, e: Scalar) -> Type:
    return Vector(e, t.n) if isinstance(t, Vector) else e


def is_differentiable(t: Type) -> bool:
    if is_numeric(t):
        return is_floating(t)
    if isinstance(t, Matrix):
        return is_float_scalar(t.elem)
    if isinstance(t, Array):
        return is_differentiable(t.elem)
    if isinstance(t, Struct):
        return t.differentiable
    return isinstance(t, Pair)


def is_ptr_differentiable(t: Type) -> bool:
    """An IDifferentiablePtrType struct, or an array of them: derivatives go through the
    Differential's pointers."""
    if isinstance(t, Array):
        return is_ptr_differentiable(t.elem)
    return isinstance(t, Struct) and t.ptr_differential is not None


def differential(t: Type) -> Type:
    if isinstance(t, Struct) and t.ptr_differential is not None:
        return t.ptr_differential
    if isinstance(t, Struct):
        assert t.diff_struct is not None
        return t.diff_struct
    if isinstance(t, Array):
        return Array(differential(t.elem), t.n)
    if isinstance(t, Pair):
        return Pair(differential(t.elem))
    return t


def make_differential_struct(s: Struct) -> Struct:
    d = Struct(s.sname + ".Differential", differentiable=True)
    d.fields = [(n, differential(t), False) for n, t, nd in s.fields if not nd and is_differentiable(t)]
    d.diff_struct = d
    return d


# Arrays are SSA values (one per scalar) in the IR and memory (groupshared) is small: beyond this
# many scalars a type would exhaust the compiler long before any device could hold it.
MAX_SCALARS = 1 << 16
MAX_VALUE_SCALARS = 1 << 10  # a value's (type_resolution.resolve_value): 1024 compile in seconds, 4096 in minutes


def scalar_count(t: Type) -> int:
    """How many scalars (leaves) a value of t has, counted without listing them."""
    if isinstance(t, Array):
        return t.n * scalar_count(t.elem)
    if isinstance(t, Vector):
        return t.n
    if isinstance(t, Matrix):
        return t.rows * t.cols
    if isinstance(t, Struct):
        return sum(scalar_count(ft) for _, ft, _ in t.fields)
    return 1


def struct_held(t: Type, structs: list[Struct]) -> tuple[str, Struct] | None:
    """Whether a value of `t` holds one of `structs` by value ("value") or through a pointer
    ("pointer"): through arrays, struct fields (Optional's too) and pairs."""
    seen: set[int] = set()

    def walk(t: Type, via: str) -> tuple[str, Struct] | None:
        if isinstance(t, Struct):
            if any(t is s for s in structs):
                return via, t
            if id(t) in seen:
                return None
            seen.add(id(t))
            return next((h for _, ft, _ in t.fields if (h := walk(ft, via))), None)
        if isinstance(t, Array | Pair | PtrPair):
            return walk(t.elem, via)
        if isinstance(t, Pointer):
            return walk(t.elem, "pointer")
        return None

    return walk(t, "value")


def holds_pointer(t: Type) -> bool:
    if isinstance(t, Pointer):
        return True
    if isinstance(t, Array):
        return holds_pointer(t.elem)
    if isinstance(t, Struct):
        return any(holds_pointer(ft) for _, ft, _ in t.fields)
    if isinstance(t, PtrPair):
        return holds_pointer(t.elem) or holds_pointer(differential(t.elem))
    return False


def scalar_leaves(t: Type) -> list[Scalar] | None:
    """The scalars a value of t is laid out as in memory (vectors and structs as consecutive
    scalars), or None when t has no such layout (pointers, buffers)."""
    if isinstance(t, Scalar):
        return [t]
    if isinstance(t, Vector):
        return [t.elem] * t.n
    if isinstance(t, Matrix):
        return [t.elem] * (t.rows * t.cols)
    if isinstance(t, Array):
        inner = scalar_leaves(t.elem)
        return None if inner is None else inner * t.n
    if isinstance(t, Struct):
        out: list[Scalar] = []
        for _, ft, _ in t.fields:
            inner = scalar_leaves(ft)
            if inner is None:
                return None
            out += inner
        return out
    return None


def is_aggregate_buffer(t: Type) -> bool:
    """A buffer of structs or arrays: its memref holds their scalars one after another."""
    # (not interface values: dynamic_buffers.py reads those)
    return isinstance(t, Buffer) and isinstance(t.elem, Struct | Array | Matrix) and \
        getattr(t.elem, "dynamic_of", None) is None


def pointee_scalar(t: Type) -> Scalar | None:
    """The one scalar element type a pointer to t addresses memory in, or None if t mixes several."""
    ss = scalar_leaves(t)
    if not ss or any(x != ss[0] for x in ss):
        return None
    return ss[0]


def byte_addressed(t: Type) -> bool:
    """A pointer (or structured buffer) whose memory is bytes (`memref<?xi8>`, offsets in bytes):
    `void*`, and a pointee of several scalar types (`struct AdamState { half m; half v; int i; }`),
    whose fields sit where byte_layout puts them. Other pointers count in their one scalar type."""
    if isinstance(t, Pointer):
        return t.elem == VOID or (not t.by_value and not t.atomic and pointee_scalar(t.elem) is None
                                  and getattr(t.elem, "dynamic_of", None) is None)
    return isinstance(t, ByteBuffer) or (isinstance(t, Buffer) and isinstance(t.elem, Struct)
                                         and t.elem.dynamic_of is None and pointee_scalar(t.elem) is None)


def scalar_bytes(s: Scalar) -> int:
    if s.kind in INT_KINDS:
        return INT_KINDS[s.kind][0] // 8
    return {"half": 2, "float": 4, "double": 8}[s.kind]


def byte_layout(t: Type) -> tuple[int, int, list[tuple[int, Scalar]]]:
    """(size, alignment, [(byte offset, scalar) per scalar]) of t in memory, by Slang's natural
    (C) layout: a scalar is aligned to its size, a vector or matrix to its element (rows one
    after another), an array's elements are its element's size apart, a struct's fields each at
    the next offset that is a multiple of their alignment, its size rounded up to a multiple of
    its largest field alignment. numpy's structured dtypes with align=True lay out the same
    (runtime/byte_structs.py). Raises TypeError for what has no bytes of its own (bool, pointers,
    buffers)."""
    if isinstance(t, Scalar):
        if t.kind == "bool":
            raise TypeError("bool has no byte layout here")
        n = scalar_bytes(t)
        return n, n, [(0, t)]
    if isinstance(t, Vector):
        n = scalar_bytes(t.elem) if t.elem.kind != "bool" else byte_layout(t.elem)[0]
        return n * t.n, n, [(k * n, t.elem) for k in range(t.n)]
    if isinstance(t, Matrix):
        return byte_layout(t.as_rows())
    if isinstance(t, Array):
        size, align, inner = byte_layout(t.elem)
        return size * t.n, align, [(i * size + o, s) for i in range(t.n) for o, s in inner]
    if isinstance(t, Struct) and t.dynamic_of is None:
        at, align, out = 0, 1, []
        for _, ft, _ in t.fields:
            size, a, inner = byte_layout(ft)
            at = -(-at // a) * a
            out += [(at + o, s) for o, s in inner]
            at, align = at + size, max(align, a)
        return -(-at // align) * align, align, out
    raise TypeError(f"{t} has no byte layout here")


def field_byte_offset(s: Struct, index: int) -> int:
    """Where field `index` of s starts in memory (byte_layout's rule)."""
    at = 0
    for k, (_, ft, _) in enumerate(s.fields):
        _, a, _ = byte_layout(ft)
        at = -(-at // a) * a
        if k == index:
            return at
        at += byte_layout(ft)[0]
    raise IndexError(index)


def ir_scalar(s: Scalar) -> Attribute:
    """Integers are signless in the IR (int and uint are both i32): the ops carry the signedness."""
    if s.kind in INT_KINDS or s.kind == "bool":
        return IntegerType(int_bits(s))
    return {"float": Float32Type(), "half": Float16Type(), "double": Float64Type()}[s.kind]


def named_leaves(t: Type, base: str) -> list[tuple[str, tuple[str, str] | None]]:
    """Per leaf of a value called `base`: a readable name (`p_x` for field x of struct p) and its
    pointer role: ("pointer", p) for the memref of a Slang pointer p, ("offset", p) for its index,
    None for any other leaf. The kernel ABI's roles (dialects/abi.py) are recorded from these
    where a pointer is split in two."""
    if isinstance(t, Matrix):
        return named_leaves(t.as_rows(), base)
    if isinstance(t, Array):
        return [x for i in range(t.n) for x in named_leaves(t.elem, f"{base}_{i}")]
    if isinstance(t, Struct):
        return [x for fname, ft, _ in t.fields for x in named_leaves(ft, f"{base}_{fname}")]
    if isinstance(t, Pair):
        return named_leaves(t.elem, base)
    if isinstance(t, PtrPair):
        return named_leaves(t.elem, f"{base}_p") + named_leaves(differential(t.elem), f"{base}_d")
    if isinstance(t, Pointer):
        if t.by_value:
            return named_leaves(t.elem, base)
        return [(base, ("pointer", base)), (f"{base}_off", ("offset", base))]
    if isinstance(t, Texture):
        lanes = t.elem.n if isinstance(t.elem, Vector) else 1
        return [(base, ("texels", base, lanes)), (f"{base}_width", ("width", base)), (f"{base}_height", ("height", base))]
    return [(base, None)]


def leaf_names(t: Type, base: str) -> list[str]:
    return [name for name, _ in named_leaves(t, base)]


def pointer_roles(t: Type, base: str) -> list[tuple[str, str] | None]:
    return [role for _, role in named_leaves(t, base)]


def no_diff_leaves(t: Type) -> list[bool]:
    """Per leaf: whether it sits in a `no_diff` field of a differentiable struct (at any depth),
    so that the value stored there must drop its derivative."""
    if isinstance(t, Array):
        return no_diff_leaves(t.elem) * t.n
    if isinstance(t, Struct):
        out: list[bool] = []
        for _, ft, nd in t.fields:
            out += [True] * leaf_count(ft) if nd and t.differentiable else no_diff_leaves(ft)
        return out
    return [False] * leaf_count(t)


def leaves(t: Type) -> list[tuple[Attribute, bool]]:
    """IR type of each leaf and whether that leaf carries a derivative."""
    if isinstance(t, Scalar):
        return [(ir_scalar(t), is_float_scalar(t))]
    if isinstance(t, Vector):
        return [(VectorType(ir_scalar(t.elem), [t.n]), is_float_scalar(t.elem))]
    if isinstance(t, Array):
        return leaves(t.elem) * t.n
    if isinstance(t, Matrix):
        return leaves(t.as_rows())
    if isinstance(t, Struct):
        out = []
        for _, ft, nd in t.fields:
            out += [(ir, d and not nd and t.differentiable) for ir, d in leaves(ft)]
        return out
    if isinstance(t, Pair):
        return [(PairType(ir) if d else ir, d) for ir, d in leaves(t.elem)]
    if isinstance(t, PtrPair):
        return [(ir, False) for ir, _ in leaves(t.elem) + leaves(differential(t.elem))]
    if isinstance(t, Buffer):
        if isinstance(t.elem, Struct) and t.elem.dynamic_of is not None:  # words (dynamic_buffers.py)
            return [(MemRefType(IntegerType(32), [DYNAMIC_INDEX]), False)]
        if byte_addressed(t):
            return [(MemRefType(IntegerType(8), [DYNAMIC_INDEX]), False)]
        if is_aggregate_buffer(t):
            return [(MemRefType(ir_scalar(pointee_scalar(t.elem)), [DYNAMIC_INDEX]), False)]
        (ir, _), = leaves(t.elem) if len(leaves(t.elem)) == 1 else [(None, False)]
        return [(MemRefType(ir, [DYNAMIC_INDEX]), False)]
    if isinstance(t, Pointer):
        if isinstance(t.elem, Struct) and t.elem.dynamic_of is not None:  # words (dynamic_buffers.py)
            return [(MemRefType(IntegerType(32), [DYNAMIC_INDEX]), False), (IndexType(), False)]
        if t.by_value:
            return [(ir, False) for ir, _ in leaves(t.elem)]
        if byte_addressed(t):
            return [(MemRefType(IntegerType(8), [DYNAMIC_INDEX]), False), (IndexType(), False)]
        e = pointee_scalar(t.elem)
        assert e is not None, f"pointer to {t.elem}"
        if t.space:  # work-group memory
            return [(local_memref(ir_scalar(e), [DYNAMIC_INDEX]), False), (IndexType(), False)]
        return [(MemRefType(ir_scalar(e), [DYNAMIC_INDEX]), False), (IndexType(), False)]
    if isinstance(t, Texture):
        e = elem_of(t.elem)
        assert e is not None, f"texture of {t.elem}"
        return [(MemRefType(ir_scalar(e), [DYNAMIC_INDEX]), False), (IntegerType(32), False), (IntegerType(32), False)]
    if isinstance(t, NativeStr):
        return [(IntegerType(32), False)]
    if isinstance(t, Void | Null | Sampler):
        return []
    raise TypeError(f"no IR for {t}")


def leaf_types(t: Type) -> list[Attribute]:
    return [ir for ir, _ in leaves(t)]


def leaf_count(t: Type) -> int:
    return len(leaves(t))


def field_offset(s: Struct, index: int) -> tuple[int, int]:
    """First leaf and leaf count of field `index` of struct s."""
    start = sum(leaf_count(t) for _, t, _ in s.fields[:index])
    return start, leaf_count(s.fields[index][1])


def common_type(a: Type, b: Type) -> Type | None:
    """The type both operands of an arithmetic operator convert to (Slang's promotion)."""
    ea, eb = elem_of(a), elem_of(b)
    if ea is None or eb is None:
        return None
    e = ea if RANK[ea.kind] >= RANK[eb.kind] else eb
    if isinstance(a, Vector) and isinstance(b, Vector):
        if a.n != b.n:
            return None
        return Vector(e, a.n)
    if isinstance(a, Vector):
        return Vector(e, a.n)
    if isinstance(b, Vector):
        return Vector(e, b.n)
    return e


def convertible(src: Type, dst: Type) -> bool:
    """Implicit conversions: equal types, numeric scalar to scalar/vector, vector to vector of the
    same length (element conversion), init lists are handled by the checker."""
    if src == dst:
        return True
    if isinstance(dst, Struct) and (dst.optional_of is not None or dst.optional_diff_of is not None):
        return optional_convertible(src, dst)
    if src == NULLPTR:
        return isinstance(dst, Pointer) and not dst.by_value
    if isinstance(src, StringT) and dst == NATIVE_STRING:
        return True
    if isinstance(src, Scalar) and isinstance(dst, Scalar | Vector):
        return True
    if isinstance(src, Vector) and isinstance(dst, Vector):
        return src.n == dst.n
    if isinstance(src, Vector) and isinstance(dst, Scalar):
        return True  # truncation, as HLSL allows (with a warning)
    if isinstance(src, Array) and isinstance(dst, Array):
        return src.n == dst.n and convertible(src.elem, dst.elem)
    if isinstance(dst, Matrix):  # a scalar fills every element; a matrix converts its elements
        return isinstance(src, Scalar) or isinstance(src, Matrix) and (src.rows, src.cols) == (dst.rows, dst.cols)
    if isinstance(src, Struct) and isinstance(dst, Struct):
        return same_layout_differential(src, dst) or union_slot(dst, src) is not None
    return False


def optional_convertible(src: Type, dst: Struct) -> bool:
    """Into `Optional<T>`: `none`, a T (present), another Optional whose value converts. Into its
    Differential (which has no hasValue: presence is the primal's): the same, of T.Differential."""
    inner = dst.optional_of if dst.optional_of is not None else differential(dst.optional_diff_of.optional_of)  # type: ignore[union-attr]
    if src == NONE:
        return True
    if isinstance(src, Struct) and src.optional_of is not None:
        return convertible(src.optional_of, inner)
    if isinstance(src, Struct) and src.optional_diff_of is not None:
        return convertible(differential(src.optional_diff_of.optional_of), inner)  # type: ignore[arg-type]
    return convertible(src, inner)


def union_slot(dyn: Struct, t: Type) -> int | None:
    """The field of interface union `dyn` (dynamic.py) that holds a value of struct t, or None."""
    if dyn.dynamic_of is None or t is dyn:
        return None
    for i, (_, ft, _) in enumerate(dyn.fields):
        if i > 0 and ft is t:
            return i
    return None


def union_tag(dyn: Struct, slot: int) -> int:
    """The tag of interface union `dyn` whose value is in field `slot` (its conformance id)."""
    return dyn.union_tags[slot - 1] if dyn.union_tags else slot - 1


def same_layout_differential(a: Struct, b: Struct) -> bool:
    """A struct and its synthesized Differential convert into each other when they have the same
    fields (Slang makes such a Differential the struct itself)."""
    if not (a.diff_struct is b or b.diff_struct is a):
        return False
    return [(n, t) for n, t, _ in a.fields] == [(n, t) for n, t, _ in b.fields]
