"""The kernel ABI as IR data: each parameter of an entry point says what the host passes for it.

`#diff.abi<ROLE>` in a parameter's argument attributes, under the key `diff.abi`:

  #diff.abi<pointer of "p">   the memref of Slang pointer p (its storage)
  #diff.abi<offset of "p">    the index into that memref where p points; always right after it
  #diff.abi<buffer>           a memref passed alone (a global buffer)
  #diff.abi<uniform>          a memref holding a global uniform value's scalars (`uniform uint n;`,
                              a cbuffer's member): the host passes the value, the runtime a buffer
  #diff.abi<value>            a scalar or vector passed by value
  #diff.abi<texels of "t">    the memref of texture t's texels (frontend/textures.py)
  #diff.abi<width of "t">     t's width (i32), right after its texels; then
  #diff.abi<height of "t">    its height (i32)
  #diff.abi<dims of "t">      a memref<2xi32> holding (width, height): a global texture's, whose
                              texels and dims are buffers of their own

and the parameters the checks add, which the runtime supplies itself:

  #diff.abi<length of "b">    the element count of buffer or pointer parameter b (bounds-check)
  #diff.abi<shadow of "b">    b's written-elements shadow (uninit-check, the sanitizer)
  #diff.abi<track of "b">     b's track number (uninit-check)
  #diff.abi<status of "c">    a status buffer: c is "bounds", "uninit", or a status global's name
                              (diffc/kernel_support/status_report.py)

The front end writes pointer/offset where it splits a pointer into its two leaves (the name
`"p"` only ties the pair together; binding goes by position and the parameter names); the check
passes write theirs when they append a parameter (`added_attrs`);
lower-entry-points gives every other kernel parameter buffer or value, and a pass that adds a
kernel parameter records its role (`added_attrs`). `abi_problem` is what verification checks: a
pass that drops, reorders or adds kernel parameters without keeping the roles in step is caught
there, before the runtime binds arguments by them.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType, IntAttr, IntegerType, MemRefType, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

ABI = "diff.abi"  # the argument attribute holding a parameter's AbiRoleAttr
ROLES = ("pointer", "offset", "buffer", "value", "texels", "width", "height", "dims", "length", "shadow", "track",
         "status", "uniform")
# roles that name what they belong to
_OF = ("pointer", "offset", "texels", "width", "height", "dims", "length", "shadow", "track", "status")
_MEMORY = ("pointer", "buffer", "texels", "dims", "shadow", "status", "uniform")  # roles of a memref
_FOLLOWS = {"offset": "pointer", "width": "texels", "height": "width"}  # role -> the role right before it
KERNEL_ENTRY = "kernel.entry"  # (dialects/kernel.py's ENTRY: kernels must have every role)


@irdl_attr_definition
class AbiRoleAttr(ParametrizedAttribute):
    """One kernel parameter's role; `pointer` names what it belongs to: the Slang pointer of a
    pointer/offset pair, the texture of texels/width/height/dims, the parameter a check's
    length, shadow or track is of, or the check a status buffer reports for."""

    name = "diff.abi"
    role: StringAttr = param_def()
    pointer: StringAttr = param_def()
    lanes: IntAttr = param_def()  # texels: the scalars of one texel (printed `x N`); else 0

    def __init__(self, role: str, pointer: str = "", lanes: int = 0):
        super().__init__(StringAttr(role), StringAttr(pointer), IntAttr(lanes))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.role.data}")
        if self.pointer.data:
            printer.print_string(" of ")
            printer.print_string_literal(self.pointer.data)
        if self.lanes.data:
            printer.print_string(f" x {self.lanes.data}")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            role = parser.parse_identifier()
            pointer = parser.parse_str_literal() if parser.parse_optional_keyword("of") else ""
            lanes = parser.parse_integer() if parser.parse_optional_keyword("x") else 0
        return (StringAttr(role), StringAttr(pointer), IntAttr(lanes))

    def verify(self) -> None:
        role, pointer = self.role.data, self.pointer.data
        if role not in ROLES:
            raise VerifyException(f"#diff.abi role must be one of {', '.join(ROLES)}, got '{role}'")
        if (self.lanes.data > 0) != (role in ("texels", "dims")):
            raise VerifyException(f"#diff.abi<{role}> {'needs' if role in ('texels', 'dims') else 'takes no'} a "
                                  "texel's scalar count (`x N`)")
        if (role in _OF) != bool(pointer):
            raise VerifyException(
                f"#diff.abi<{role}> {'needs' if role in _OF else 'takes no'} the name of what it belongs to"
                " (`of \"p\"`)"
            )


def role_of(fn: FuncOp, i: int) -> AbiRoleAttr | None:
    if fn.arg_attrs is None or i >= len(fn.arg_attrs.data):
        return None
    attr = fn.arg_attrs.data[i].data.get(ABI)
    return attr if isinstance(attr, AbiRoleAttr) else None


def plain_role(t: Attribute) -> AbiRoleAttr:
    """The role of a parameter that is not part of a pointer: a memref is a buffer."""
    return AbiRoleAttr("buffer" if isinstance(t, MemRefType) else "value")


def with_role(attrs: DictionaryAttr | None, role: AbiRoleAttr) -> DictionaryAttr:
    return DictionaryAttr({**(attrs.data if attrs is not None else {}), ABI: role})


def fill_roles(fn: FuncOp) -> None:
    """Gives each parameter of `fn` without a role its plain one (the front end gave the
    pointers theirs): what makes `fn` a kernel whose every parameter the host can bind."""
    types = fn.function_type.inputs.data
    if not types:
        return
    old = fn.arg_attrs.data if fn.arg_attrs is not None else [DictionaryAttr({})] * len(types)
    fn.arg_attrs = ArrayAttr([d if ABI in d.data else with_role(d, plain_role(t)) for d, t in zip(old, types)])


def added_attrs(fn: FuncOp, t: Attribute, attrs: dict[str, Attribute] | None = None,
                role: AbiRoleAttr | None = None) -> DictionaryAttr:
    """The argument attributes of a parameter a pass appends to `fn`: `role` (default: its plain
    role) when `fn` is a kernel that records roles (whose parameters the host binds by them),
    else only `attrs`."""
    d = DictionaryAttr(dict(attrs or {}))
    return with_role(d, role or plain_role(t)) if has_roles(fn) else d


def has_roles(fn: FuncOp) -> bool:
    return KERNEL_ENTRY in fn.attributes and any(
        role_of(fn, i) is not None for i in range(len(fn.function_type.inputs.data)))


def abi_problem(fn: FuncOp) -> str | None:
    """What is wrong with the roles of `fn`'s parameters, or None: a role must fit its type
    (pointer and buffer: a memref; offset: an index; value: no memref), a pointer's offset must
    follow it, and a kernel that has roles must give every parameter one."""
    types = fn.function_type.inputs.data
    kernel = KERNEL_ENTRY in fn.attributes
    roles = [role_of(fn, i) for i in range(len(types))]
    if fn.arg_attrs is not None:
        for i, d in enumerate(fn.arg_attrs.data):
            got = d.data.get(ABI)
            if got is not None and not isinstance(got, AbiRoleAttr):
                return f"parameter {i}: {ABI} must be a #diff.abi<...> role, got {got}"
            if got is not None:
                try:
                    got.verify()  # (parsing does not always verify attributes)
                except VerifyException as e:
                    return f"parameter {i}: {e}"
    # (a kernel written by hand for the backend alone, which no host binds, may have no roles)
    complete = kernel and any(r is not None for r in roles)
    for i, (t, r) in enumerate(zip(types, roles)):
        where = f"parameter {i} ({t})"
        if r is None:
            if complete:
                return f"{where} of a kernel has no {ABI} role (a pass added it without recording its role)"
            continue
        role, ptr = r.role.data, r.pointer.data
        if role in _MEMORY and not isinstance(t, MemRefType):
            return f"{where} has role {role}, which needs a memref"
        if role in ("width", "height") and not (isinstance(t, IntegerType) and t.width.data == 32):
            return f"{where} has role {role}, which needs an i32"
        if role in ("offset", "length") and not isinstance(t, IndexType):
            return f"{where} has role {role}, which needs an index"
        if role in ("value", "track") and isinstance(t, MemRefType):
            return f"{where} has role {role}, but a memref is passed as a pointer or a buffer"
        nxt = roles[i + 1] if i + 1 < len(roles) else None
        prev = roles[i - 1] if i > 0 else None
        if role == "pointer" and not (nxt is not None and nxt.role.data == "offset" and nxt.pointer.data == ptr):
            return f"{where} is pointer \"{ptr}\", but its offset does not follow it"
        if role == "offset" and not (prev is not None and prev.role.data == "pointer" and prev.pointer.data == ptr):
            return f"{where} is the offset of pointer \"{ptr}\", but that pointer's memref does not come right before it"
        if role in ("width", "height") and not (prev is not None and prev.role.data == _FOLLOWS[role]
                                                and prev.pointer.data == ptr):
            return f"{where} is the {role} of texture \"{ptr}\", but its {_FOLLOWS[role]} does not come right before it"
    return None


def verify_roles(fn: FuncOp) -> None:
    problem = abi_problem(fn)
    if problem is not None:
        raise VerifyException(f"'func.func' @{fn.sym_name.data}: kernel ABI: {problem}")
