"""The parameters of a function on its way to a kernel: their names (the kernel ABI reads them),
which of them are the host's buffers, and appending the parameters that a pass adds."""

from __future__ import annotations

import re

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, MemRefType, StringAttr
from xdsl.ir import Attribute, SSAValue

from diffc.dialects import kernel
from diffc.dialects.abi import AbiRoleAttr, added_attrs

NAME = "diffc.name"  # a parameter's name where its name hint cannot hold it (see param_names)


def param_names(fn: func.FuncOp) -> list[str]:
    """The names of `fn`'s parameters: `diffc.name`, else the name hint, else `arg<i>`."""
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    args = fn.body.blocks[0].args if fn.body.blocks else ()
    names = []
    for i in range(len(fn.function_type.inputs.data)):
        name = attrs[i].data.get(NAME) if i < len(attrs) else None
        if isinstance(name, StringAttr):
            names.append(name.data)
        elif i < len(args) and args[i].name_hint:
            names.append(args[i].name_hint)
        else:
            names.append(f"arg{i}")
    return names


def param_name(fn: func.FuncOp, i: int) -> str:
    return param_names(fn)[i]


def host_buffer(t) -> bool:
    """A buffer the host passes: a global memref of dynamic size (the compiler's own memory, such
    as tapes and local memory, has a static shape or a memory space)."""
    return isinstance(t, MemRefType) and kernel.memory_space(t) is None and any(d < 0 for d in t.get_shape())


def hint_for(name: str) -> str | None:
    """The name as an SSA name hint, where one can hold it (not with a `_<digits>` ending)."""
    return None if re.search(r"_\d+$", name) else name


def append_params(f: func.FuncOp, params: list[tuple[Attribute, str] | tuple[Attribute, str, AbiRoleAttr]]
                  ) -> list[SSAValue]:
    """Adds parameters (type, name[, ABI role]) after `f`'s last one: block arguments with the
    names as hints where they fit, the function type, and each name (and, on a kernel, its role:
    the one given, else a buffer or a value) in its argument attributes, which the kernel ABI
    reads."""
    block = f.body.block
    n_old = len(f.function_type.inputs.data)
    added = []
    for t, name, *_ in params:
        arg = block.insert_arg(t, len(block.args))
        arg.name_hint = hint_for(name)
        added.append(arg)
    old = f.arg_attrs.data if f.arg_attrs is not None else [DictionaryAttr({}) for _ in range(n_old)]
    f.arg_attrs = ArrayAttr([*old, *(added_attrs(f, p[0], {NAME: StringAttr(p[1])}, p[2] if len(p) > 2 else None)
                                     for p in params)])
    f.function_type = FunctionType.from_lists([a.type for a in block.args], f.function_type.outputs.data)
    return added
