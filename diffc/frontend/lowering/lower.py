"""Lowering of the checked program to func/arith/math/scf/memref + diff IR (docs/architecture.md).

Local variables live in SSA form: each variable is a binding to its current leaf values; `if`
and loops yield the bindings they change. Early `return`, `break` and `continue` set flags that
guard the statements after them and end loops (`scf.while`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr, DenseArrayBase, DictionaryAttr, FunctionType, IntegerAttr, ModuleOp,
    StringAttr, SymbolRefAttr, UnitAttr, i64, FileLineColLoc, IntAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from diffc.dialects import diff
from diffc.dialects.abi import ABI, AbiRoleAttr
from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.features import byte_pointers, textures
from diffc.frontend.features.byte_address_buffers import BYTE_ADDRESS
from diffc.frontend.api_signature import API_ATTR, describe
from diffc.frontend.lowering.derivative_checks import check_module
from diffc.frontend.features.groupshared import storage_type
from diffc.frontend.ast import walk
from diffc.frontend.lowering.bwd_params import PAIR, PAIR_INOUT, BwdParams, bwd_params, plain_params
from diffc.frontend.checker.checker import Checker
from diffc.frontend.checker.symbols import FuncInfo, Local, err, ptr_param
from diffc.frontend.checker.loop_bounds import counter_kind, for_shape, int_constant, own_jumps, static_bound, trip_count
from diffc.frontend.errors import TYPE_MISMATCH, UNSUPPORTED
from diffc.frontend.lowering.lower_builtins import BuiltinLowering
from diffc.frontend.lowering.lower_calls import CallLowering
from diffc.frontend.lowering.lower_expr import ExprLowering, uniform_storage
from diffc.frontend.features.matrices import MatrixLowering
from diffc.frontend.features.operators import source_name
from diffc.frontend.lowering.ptr_types import has_ptr_twin, ptr_twin_name
from diffc.frontend.source.source_map import SourceMap

INT_MAX = 2**31 - 1


@dataclass
class Binding:
    ty: T.Type
    values: list[SSAValue]


def global_pointer(t: T.Type) -> bool:
    """Whether a global of type t is a pointer the host binds to a whole buffer (`uniform float* p`)."""
    return isinstance(t, T.Pointer) and not t.by_value and not t.atomic


@dataclass
class LoopCtx:
    brk: str | None
    cont: str | None


class Lowering(ExprLowering, CallLowering, BuiltinLowering, MatrixLowering):
    def __init__(self, checker: Checker, source_map: SourceMap):
        self.c = checker
        self.source_map = source_map  # span offsets -> file:line:col (through the preprocessor)
        # The statement / expression being lowered, innermost last: each op it emits gets its
        # file:line:col (so pass errors are located) and is remembered in `spans`, for the
        # located checks of derivative_checks.py.
        self.at: list[A.Node] = []
        self.spans: dict[Operation, A.Node] = {}
        self.lost_derivatives: dict[Operation, A.Node] = {}  # detaches of assignments to no_diff fields
        self.funcs = checker.funcs
        self.func_ops: dict[str, func.FuncOp] = {}
        self.extra_funcs: list[func.FuncOp] = []
        self.bindings: dict[object, Binding] = {}
        self.stateless_globals: dict[int, T.Type] = {}  # globals of field-less structs, by id of symbol
        self.loops: list[LoopCtx] = []
        self.use_ret_flag = False
        self.counter = 0
        self.ptr_shadows: dict[int, list[SSAValue]] = {}  # IDifferentiablePtrType parameter -> its Differential
        self.lowering: tuple[FuncInfo, bool] | None = None  # the function being lowered, and whether as its twin
        self.bwd_params: dict[str, BwdParams] = {}  # function name -> its parameters' roles (params_of)

    def emit(self, op: Operation) -> Operation:
        if self.at:
            node = self.at[-1]
            self.spans[op] = node
            op.location = self.file_loc(node.span[0])
        return super().emit(op)

    def file_loc(self, offset: int) -> FileLineColLoc:
        loc = self.source_map.location(offset)
        return FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))

    def expr(self, e: A.Expr) -> list[SSAValue]:
        self.at.append(e)
        try:
            return super().expr(e)
        finally:
            self.at.pop()

    def binding(self, sym: Local) -> Binding:
        return self.bindings[id(sym)]

    # ---- module ----
    def module(self, prog: A.Program) -> ModuleOp:
        self.program = prog  # (its string literals are NativeStrings' numbers: native_strings.py)
        ops = []
        for d in prog.decls:
            if isinstance(d, A.Global):
                if self.c.scopes[0][d.name].value is not None:
                    continue  # a `static const`: its value is lowered where it is used
                sym = self.c.scopes[0][d.name]
                t = sym.ty
                if sym.shared:  # work-group memory (frontend/features/groupshared.py)
                    ops.append(memref.GlobalOp.get(StringAttr(d.name), storage_type(t), UnitAttr(), StringAttr("public")))
                    continue
                if not isinstance(t, T.Buffer) and T.leaf_count(t) == 0 and d.init is None and not textures.resource_global(t):
                    self.stateless_globals[id(sym)] = t  # a struct with no fields: nothing to keep
                    continue
                if global_pointer(t) and "static" not in d.mods and d.init is None:
                    ops.append(memref.GlobalOp.get(StringAttr(d.name), T.leaf_types(t)[0], UnitAttr(), StringAttr("public")))
                    continue  # `uniform float* p;`: a buffer bound by name, read from its start
                if textures.resource_global(t):
                    found = textures.global_ops(d.name, t)
                    for g in found:
                        g.location = self.file_loc(d.span[0])
                    ops += found
                    continue
                if "static" not in d.mods and d.init is None and uniform_storage(t) is not None:
                    g = memref.GlobalOp.get(StringAttr(d.name), uniform_storage(t), UnitAttr(), StringAttr("public"))
                    g.attributes[ABI] = AbiRoleAttr("uniform")  # the host passes its value (runtime/dispatch.py)
                    ops.append(g)
                    continue
                if not isinstance(t, T.Buffer):
                    what = "per-thread 'static' state" if "static" in d.mods else "a uniform value"
                    raise err(UNSUPPORTED, f"global '{d.name}' of type {t} is not supported ({what}; globals may be "
                              "RWStructuredBuffers, 'uniform' pointers, 'static const' values, or structs without "
                              "fields)", d)
                g = memref.GlobalOp.get(StringAttr(d.name), T.leaf_types(t)[0], UnitAttr(), StringAttr("public"))
                g.location = self.file_loc(d.span[0])  # (`diffc run` names the buffer's declaration)
                if t.atomic:
                    g.attributes["diffc.atomic"] = UnitAttr()
                if isinstance(t, T.ByteBuffer):  # (`diffc run` fills it as Slang's test runner does)
                    g.attributes[BYTE_ADDRESS] = UnitAttr()
                ops.append(g)
        infos = self.c.func_order  # functions, methods and generic instances
        for f in infos:
            self.func_ops[f.name] = self.declare_func(f)
            if has_ptr_twin(f):
                self.func_ops[ptr_twin_name(f.name)] = self.declare_func(f, twin=True)
        for f in infos:
            self.define_func(f)
            ops.append(self.func_ops[f.name])
            if has_ptr_twin(f):
                self.define_func(f, twin=True)
                ops.append(self.func_ops[ptr_twin_name(f.name)])
        module = ModuleOp(ops + self.extra_funcs)
        layouts = byte_pointers.record_layouts([p.ty for f in infos for p in f.params]
                                               + [sym.ty for sym in self.c.scopes[0].values()])
        if layouts is not None:  # what the host reads to lay out a struct's bytes (runtime/byte_structs.py)
            module.attributes[byte_pointers.LAYOUTS] = StringAttr(layouts)
        # functions whose derivatives come from their bodies: their calls of non-differentiable
        # functions are checked on the IR (the twin is the one differentiated, ptr_types.py)
        differentiated = {ptr_twin_name(f.name) if has_ptr_twin(f) else f.name: source_name(f.name) for f in infos
                          if f.body_differentiated and not (f.bwd_of or f.fwd_of)}
        check_module(module, self.spans, self.lost_derivatives, differentiated,
                     {key: source_name(fi.name) for key, fi in self.c.funcs.items()})
        return module

    def declare_func(self, f: FuncInfo, twin: bool = False) -> func.FuncOp:
        """f's IR function; with `twin`, the one its derivatives are taken of when f has
        IDifferentiablePtrType parameters (each is then its DifferentialPtrPair's leaves, see
        docs/frontend.md). The primal of such an f carries no diff facts: it is never differentiated."""
        arg_types: list[Attribute] = []
        arg_attrs: list[dict] = []
        res_types: list[Attribute] = []
        res_attrs: list[dict] = []

        def add(types, attrs, ty: T.Type, no_diff: bool, extra=None):
            for ir, carries in T.leaves(ty):
                types.append(ir)
                a = dict(extra or {})
                if diff.is_differentiable_type(ir) and (no_diff or not carries):
                    a[diff.NO_DIFF] = UnitAttr()
                attrs.append(a)

        if f.bwd_of:  # Slang's `inout DifferentialPair<T>` becomes primal in, gradient out
            params = self.params_of(f)
            for i, cotangent in params.order:
                p, role = f.params[i], params.roles[i]
                if cotangent and role == PAIR_INOUT:  # the cotangent coming in
                    add(arg_types, arg_attrs, T.differential(p.ty.elem), False)  # type: ignore[attr-defined]
                elif not cotangent and role in (PAIR, PAIR_INOUT):
                    add(arg_types, arg_attrs, p.ty.elem, p.no_diff)  # type: ignore[attr-defined]
                    add(res_types, res_attrs, T.differential(p.ty.elem), False)  # type: ignore[attr-defined]
                else:
                    add(arg_types, arg_attrs, p.ty, p.no_diff)
        else:
            add(res_types, res_attrs, f.ret, f.ret_no_diff)
            for p in f.params:
                extra = {"diffc.semantic": StringAttr(p.semantic)} if p.semantic else None
                if p.direction != "out":
                    ty = T.PtrPair(p.ty) if twin and ptr_param(p) else p.ty
                    add(arg_types, arg_attrs, ty, p.no_diff, extra)
            for p in f.params:
                if p.direction != "in":
                    add(res_types, res_attrs, p.ty, p.no_diff)
        dicts = lambda xs: ArrayAttr([DictionaryAttr(x) for x in xs])  # noqa: E731
        op = func.FuncOp(ptr_twin_name(f.name) if twin else f.name, FunctionType.from_lists(arg_types, res_types),
                         Region(Block(arg_types=arg_types)),
                         arg_attrs=dicts(arg_attrs) if any(arg_attrs) else None,
                         res_attrs=dicts(res_attrs) if any(res_attrs) else None)
        api = None if twin or f.bwd_of else describe(f.params, f.ret)
        if api is not None:  # the Slang-level signature, for calls over tensors (api_signature.py)
            op.attributes[API_ATTR] = StringAttr(api)
        if f.decl is not None:  # at its name: where a pass's error about the function points
            op.location = self.file_loc(getattr(f.decl, "name_span", f.decl.span)[0])
        at = f.attrs
        if has_ptr_twin(f) and not twin:
            at = {k: a for k, a in at.items() if k in ("shader", "numthreads")}
        elif f.differentiable:
            op.attributes[diff.DIFFERENTIABLE] = UnitAttr()
            if f.fwd_custom:
                op.attributes[diff.FWD_DERIVATIVE] = SymbolRefAttr(f.fwd_custom)
            if f.bwd_custom:
                op.attributes[diff.BWD_DERIVATIVE] = SymbolRefAttr(f.bwd_custom)
            if f.substitute:
                op.attributes[diff.PRIMAL_SUBSTITUTE] = SymbolRefAttr(f.substitute)
        if "PreferRecompute" in at:
            op.attributes[diff.PREFER] = StringAttr("recompute")
        if "PreferCheckpoint" in at:
            op.attributes[diff.PREFER] = StringAttr("checkpoint")
        if "shader" in at and at["shader"].args and isinstance(at["shader"].args[0], A.Str):
            op.attributes["diffc.shader"] = StringAttr(at["shader"].args[0].value)
        if "numthreads" in at:
            args = at["numthreads"].args
            for a in args[3:] or [a for a in args if not (isinstance(a, A.Num) and not a.is_float and a.value >= 1)]:
                raise err(TYPE_MISMATCH, "[numthreads] takes one to three positive integer constants", a)
            if not args:
                raise err(TYPE_MISMATCH, "[numthreads] takes one to three positive integer constants", at["numthreads"])
            for a in args:  # Slang keeps each extent as an int: a larger one reaches no kernel
                if int(a.value) > INT_MAX:
                    raise err(TYPE_MISMATCH, f"invalid 'numthreads' value: {int(a.value)} is more than an int "
                              f"holds ({INT_MAX})", a)
            op.attributes["diffc.numthreads"] = DenseArrayBase.from_list(i64, [int(a.value) for a in args])
            if "shader" not in at:  # Slang: [numthreads] alone makes a compute entry point
                op.attributes["diffc.shader"] = StringAttr("compute")
        return op

    def params_of(self, f: FuncInfo) -> BwdParams:
        """How f's parameters map onto its IR arguments (frontend/lowering/bwd_params.py), derived once
        per function: its declaration and its body's bindings read the same object."""
        found = self.bwd_params.get(f.name)
        if found is None:
            found = bwd_params(f, self.funcs.get(f.bwd_of)) if f.bwd_of else plain_params(f)
            self.bwd_params[f.name] = found
        return found

    @staticmethod
    def record_entry_params(op: func.FuncOp, names: list[str], roles: list[tuple[str, str] | None]) -> None:
        """What kernels and dispatch read of an entry point's parameters (`names`, `roles`: per
        leaf, in order): each half of a pointer gets its kernel ABI role (dialects/abi.py) here,
        where the pointer became two leaves; and xDSL drops a `_<digits>` tail from value names
        (`w_0` becomes `%w`), so a parameter named so (array elements) also carries its name as
        `diffc.name`."""
        args = op.body.blocks[0].args
        old = op.arg_attrs.data if op.arg_attrs else [DictionaryAttr({})] * len(args)
        attrs = []
        for name, role, d in zip(names, roles, old):
            entries = dict(d.data)
            if re.search(r"_\d+$", name):
                entries["diffc.name"] = StringAttr(name)
            if role is not None:
                entries[ABI] = AbiRoleAttr(*role)
            attrs.append(DictionaryAttr(entries))
        op.arg_attrs = ArrayAttr(attrs)

    def define_func(self, f: FuncInfo, twin: bool = False) -> None:
        op = self.func_ops[ptr_twin_name(f.name) if twin else f.name]
        self.block = op.body.blocks[0]
        self.bindings = {k: Binding(t, []) for k, t in self.stateless_globals.items()}
        self.ptr_shadows = {}
        self.lowering = (f, twin)
        args = list(self.block.args)
        pair_params = []
        names: list[str] = []
        abi_roles: list[tuple[str, str] | None] = []
        params = self.params_of(f)
        roles = params.roles
        incoming = {}  # the cotangents that inout pairs start from
        # in the order of the IR's arguments: primal inputs, then cotangents
        for i, cotangent in params.order:
            p, loc = f.params[i], f.locals[i]
            if cotangent and roles[i] == PAIR_INOUT:
                m = T.leaf_count(T.differential(p.ty.elem))  # type: ignore[attr-defined]
                incoming[id(loc)], args = args[:m], args[m:]
                continue
            if twin and ptr_param(p):  # the primal's leaves, then its Differential's
                n, m = T.leaf_count(p.ty), T.leaf_count(T.differential(p.ty))
                vals = args[:n]
                for arg, name in zip(args[n : n + m], T.leaf_names(T.differential(p.ty), f"{p.name}_d")):
                    arg.name_hint = name
                self.ptr_shadows[id(loc)] = args[n : n + m]
                del args[n : n + m]
            elif roles[i] in (PAIR, PAIR_INOUT):
                n = T.leaf_count(p.ty.elem)
                vals = args[:n]  # the pair is made once the incoming cotangents (at the end) are known
                pair_params.append((loc, roles[i]))
            elif p.direction == "out":
                n, vals = 0, self.const(0, p.ty)
            else:
                n = T.leaf_count(p.ty)
                vals = args[:n]
            for arg, name in zip(args[:n], T.leaf_names(p.ty, p.name)):
                arg.name_hint = name  # parameter names survive into the IR, the C and the Python API
                names.append(name)
            abi_roles += T.pointer_roles(p.ty, p.name)[:n]
            args = args[n:]
            if f.zero_derivative:  # [TreatAsDifferentiable]: nothing that flows in carries a derivative
                vals = [self.v(diff.DetachOp(x)) if diff.is_differentiable_type(x.type) else x for x in vals]
            self.bindings[id(loc)] = Binding(p.ty, list(vals))
        for loc, role in pair_params:
            b = self.binding(loc)
            b.values = self.make_pairs(b.values, incoming.get(id(loc)), b.ty.elem)
        if "diffc.shader" in op.attributes:
            self.record_entry_params(op, names, abi_roles)
        body = f.decl.body  # type: ignore[union-attr]
        stmts = body.stmts
        self.use_ret_flag = any(isinstance(n, A.Return) for n in walk(stmts[:-1])) or any(
            isinstance(n, A.Return) for n in walk(stmts[-1:]) if n is not (stmts[-1] if stmts else None))
        self.bindings["$retval"] = Binding(f.ret, self.const(0, f.ret) if self.use_ret_flag else [])
        if self.use_ret_flag:
            self.bindings["$ret"] = Binding(T.BOOL, self.const(0, T.BOOL))
        self.loops = []
        self.stmts(stmts)
        results = list(self.bindings["$retval"].values)
        if len(results) != T.leaf_count(f.ret):  # no return statement: Slang leaves it undefined
            results = self.const(0, f.ret)
        if f.bwd_of:
            for loc, _ in pair_params:
                b = self.binding(loc)
                results += self.pair_parts(b.values, b.ty.elem)[1]
        else:
            for p, loc in zip(f.params, f.locals):
                if p.direction != "in":
                    results += self.binding(loc).values
        self.emit(func.ReturnOp(*results))

    # ---- statements ----
    def stmts(self, stmts: list[A.Stmt]) -> None:
        for i, s in enumerate(stmts):
            self.stmt(s)
            if i + 1 < len(stmts) and self.may_exit(s):
                rest = stmts[i + 1 :]
                self.region_if(self.running(), lambda: self.stmts(rest), None)
                return

    def may_exit(self, s: A.Stmt) -> bool:
        if self.use_ret_flag and any(isinstance(n, A.Return) for n in walk(s)):
            return True
        return bool(self.loops) and any(True for _ in own_jumps(s))

    def running(self) -> SSAValue:
        """True while no return/break/continue has fired."""
        flags = [self.bindings["$ret"].values[0]] if self.use_ret_flag else []
        if self.loops:
            for key in (self.loops[-1].brk, self.loops[-1].cont):
                if key is not None:
                    flags.append(self.bindings[key].values[0])
        if not flags:
            return self.const(1, T.BOOL)[0]
        acc = flags[0]
        for x in flags[1:]:
            acc = self.v(arith.OrIOp(acc, x))
        return self.v(arith.XOrIOp(acc, self.const(1, T.BOOL)[0]))

    def stmt(self, s: A.Stmt) -> None:
        self.at.append(s)
        try:
            self.lower_stmt(s)
        finally:
            self.at.pop()

    def lower_stmt(self, s: A.Stmt) -> None:
        if isinstance(s, A.Block):
            self.stmts(s.stmts)
        elif isinstance(s, A.DeclGroup):
            self.stmts(s.decls)  # type: ignore[arg-type]
        elif isinstance(s, A.VarDecl):
            t = s.decl_ty
            vals = self.lower_as(s.init, t) if s.init is not None else self.const(0, t)
            self.bindings[id(s.local)] = Binding(t, vals)  # type: ignore[attr-defined]
        elif isinstance(s, A.ExprStmt):
            self.expr(s.expr)
        elif isinstance(s, A.Return):
            if s.value is not None:
                rb = self.bindings["$retval"]
                rb.values = self.lower_as(s.value, rb.ty)
            if self.use_ret_flag:
                self.bindings["$ret"].values = self.const(1, T.BOOL)
        elif isinstance(s, A.Break | A.Continue):
            key = None
            if self.loops:
                key = self.loops[-1].brk if isinstance(s, A.Break) else self.loops[-1].cont
            if key is None:
                word = "break" if isinstance(s, A.Break) else "continue"
                raise err(UNSUPPORTED, f"'{word}' outside a loop" + (" or switch" if word == "break" else ""), s)
            self.bindings[key].values = self.const(1, T.BOOL)
        elif isinstance(s, A.If):
            (c,) = self.lower_as(s.cond, T.BOOL)
            orelse = s.orelse
            self.region_if(c, lambda: self.stmt(s.then), (lambda: self.stmt(orelse)) if orelse else None)
        elif isinstance(s, A.Switch):
            self.switch(s)
        elif isinstance(s, A.For):
            self.for_loop(s)
        elif isinstance(s, A.While):
            self.while_loop(s.cond, s.body, None, s.attrs, s.do_while, s, bound=static_bound(s))
        else:
            raise err(UNSUPPORTED, f"unsupported statement {type(s).__name__}", s)

    def switch(self, s: A.Switch) -> None:
        """A chain of ifs, one per case, in source order (default last). A case runs its body
        and, when that body does not end in break or return, falls through into the following
        bodies, as in C; a `break` elsewhere in a case sets a flag that guards what follows."""
        (x,) = self.expr(s.value)
        bodies = [list(c.body) for c in s.cases]
        runs: list[list[A.Stmt]] = []
        for k in range(len(bodies)):
            run: list[A.Stmt] = []
            for body in bodies[k:]:
                run += body
                if body and isinstance(body[-1], A.Break | A.Return):
                    break
            if run and isinstance(run[-1], A.Break):
                run = run[:-1]
            runs.append(run)
        enclosing = self.loops[-1] if self.loops else None
        cases = [(c.values, run) for c, run in zip(s.cases, runs) if c.values is not None]
        default = next((run for c, run in zip(s.cases, runs) if c.values is None), None)

        def lower_run(run: list[A.Stmt]) -> None:
            # `continue` inside the switch belongs to the enclosing loop
            inner_break = any(isinstance(j, A.Break) for j in own_jumps(run))
            self.counter += 1
            ctx = LoopCtx(f"$brk{self.counter}" if inner_break else None, enclosing.cont if enclosing else None)
            if ctx.brk:
                self.bindings[ctx.brk] = Binding(T.BOOL, self.const(0, T.BOOL))
            self.loops.append(ctx)
            self.stmts(run)
            self.loops.pop()
            if ctx.brk:
                del self.bindings[ctx.brk]

        def chain(k: int) -> None:
            if k == len(cases):
                if default is not None:
                    lower_run(default)
                return
            values, run = cases[k]
            hit = None
            for v in values:
                (cv,) = self.lower_as(v, s.value.ty)
                h = self.v(arith.CmpiOp(x, cv, "eq"))
                hit = h if hit is None else self.v(arith.OrIOp(hit, h))
            self.region_if(hit, lambda: lower_run(run), lambda: chain(k + 1))

        chain(0)

    # ---- structured control flow over bindings ----
    def snapshot(self) -> dict[object, list[SSAValue]]:
        return {k: list(b.values) for k, b in self.bindings.items()}

    def restore(self, snap: dict[object, list[SSAValue]]) -> None:
        for k in list(self.bindings):
            if k not in snap:
                del self.bindings[k]
        for k, vals in snap.items():
            self.bindings[k].values = list(vals)

    def in_block(self, block: Block, fn) -> None:
        saved = self.block
        self.block = block
        if fn is not None:
            fn()
        self.block = saved

    def region_if(self, cond: SSAValue, then_fn, else_fn) -> None:
        before = self.snapshot()
        blocks, afters = [], []
        for fn in (then_fn, else_fn):
            blk = Block()
            self.in_block(blk, fn)
            afters.append({k: list(self.bindings[k].values) for k in before})
            blocks.append(blk)
            self.restore(before)
        changed = [k for k in before if any(not _same(a[k], before[k]) for a in afters)]
        types = [x.type for k in changed for x in before[k]]
        for blk, after in zip(blocks, afters):
            blk.add_op(scf.YieldOp(*[x for k in changed for x in after[k]]))
        op = self.emit(scf.IfOp(cond, types, Region(blocks[0]), Region(blocks[1])))
        self.assign_results(changed, list(op.results))

    def assign_results(self, keys: list, results: list[SSAValue]) -> None:
        for k in keys:
            n = len(self.bindings[k].values)
            self.bindings[k].values, results = results[:n], results[n:]

    def carried(self, *nodes) -> list:
        """Bindings a loop may change: assigned variables, out-arguments, and the flags."""
        keys = []
        for n in walk(list(nodes)):
            targets = []
            if isinstance(n, A.Assign | A.IncDec):
                targets.append(n.target)
            elif isinstance(n, A.Call) and n.kind == "call":  # what goes to out/inout parameters
                targets += [a for a, q in zip(n.args, n.target[2]) if q.direction != "in"]
            for t in targets:
                memory = False  # `p[i] = v`, `buf[i] = v`, `p->f = v`: a write to memory, not to p
                while isinstance(t, A.Member | A.Index):
                    memory = memory or isinstance(getattr(t.base, "ty", None), T.Buffer | T.Pointer)
                    t = t.base
                if not memory and isinstance(t, A.Name) and isinstance(t.sym, Local) and id(t.sym) in self.bindings:
                    keys.append(id(t.sym))
            if isinstance(n, A.Return):
                keys += ["$retval", "$ret"] if self.use_ret_flag else ["$retval"]
        return list(dict.fromkeys(keys))

    def flat(self, keys: list) -> list[SSAValue]:
        return [x for k in keys for x in self.bindings[k].values]

    def bind_args(self, keys: list, args) -> None:
        self.assign_results(keys, list(args))

    def loop_ctx(self, body: A.Stmt) -> LoopCtx:
        own = list(own_jumps(body))
        self.counter += 1
        brk = f"$brk{self.counter}" if any(isinstance(n, A.Break) for n in own) else None
        cont = f"$cont{self.counter}" if any(isinstance(n, A.Continue) for n in own) else None
        if brk:
            self.bindings[brk] = Binding(T.BOOL, self.const(0, T.BOOL))
        return LoopCtx(brk, cont)

    def loop_body(self, ctx: LoopCtx, body: A.Stmt, step: A.Expr | None) -> None:
        if ctx.cont:
            self.bindings[ctx.cont] = Binding(T.BOOL, self.const(0, T.BOOL))
        self.loops.append(ctx)
        self.stmt(body)
        self.loops.pop()
        if ctx.cont:
            del self.bindings[ctx.cont]
        if step is not None:
            self.expr(step)

    def bound_value(self, e: A.Expr, it: T.Scalar) -> list[SSAValue]:
        """A for loop's bound as one constant where the text fixes it (`N + M` of static consts),
        so that the loop's trip count is plain in the IR (the tape of a backward pass needs it)."""
        v = int_constant(e)
        lo, hi = T.int_range(it)
        return self.const(v, it) if v is not None and lo <= v <= hi else self.lower_as(e, it)

    def for_loop(self, s: A.For) -> None:
        shape = for_shape(s)
        exits = any(isinstance(n, A.Return) for n in walk(s.body)) or any(
            isinstance(n, A.Break) for n in own_jumps(s.body))
        if shape is None or exits:
            if s.init is not None:
                self.stmt(s.init)
            cond = s.cond or A.BoolLit(True, span=s.span, ty=T.BOOL)
            self.while_loop(cond, s.body, s.step, s.attrs, False, s, bound=static_bound(s))
            return
        var, lb_e, ub_e, step, inclusive = shape
        it = T.Scalar(counter_kind(s.init))  # type: ignore[arg-type]
        (lb,), (ub,) = (self.bound_value(e, it) for e in (lb_e, ub_e))
        if inclusive:
            ub = self.v(arith.AddiOp(ub, self.const(1, it)[0]))
        (st,) = self.const(step, it)
        ctx = self.loop_ctx(s.body)
        keys = self.carried(s.body)
        init = self.flat(keys)
        blk = Block(arg_types=[T.ir_scalar(it)] + [x.type for x in init])
        before = self.snapshot()

        def body():
            self.bind_args(keys, blk.args[1:])
            self.bindings[id(s.init.local)] = Binding(it, [blk.args[0]])  # type: ignore[union-attr]
            self.loop_body(ctx, s.body, None)
            self.emit(scf.YieldOp(*self.flat(keys)))

        self.in_block(blk, body)
        self.restore(before)
        op = self.emit(scf.ForOp(lb, ub, st, init, blk))
        self.loop_attrs(op, s.attrs)
        trip = trip_count(s)
        if inclusive and trip is not None and diff.MAX_ITERS not in op.attributes:
            # `i <= B` gives ub = B + 1, which is not a constant before canonicalization
            op.attributes[diff.MAX_ITERS] = IntegerAttr(max(trip, 1), 64)
        self.assign_results(keys, list(op.results))

    def while_loop(self, cond: A.Expr, body: A.Stmt, step, attrs, do_while: bool, s: A.Stmt,
                   bound: int | None = None) -> None:
        """`bound`: the trip count of a constant-bounds `for` lowered as a while (it exits early);
        reverse mode needs it as diff.max_iters when [MaxIters] does not give one."""
        ctx = self.loop_ctx(body)
        keys = self.carried(cond, body, step) + [k for k in (ctx.brk,) if k]
        init = self.flat(keys)
        types = [x.type for x in init]
        before_blk, after_blk = Block(arg_types=types), Block(arg_types=types)
        snap = self.snapshot()

        def before():
            self.bind_args(keys, before_blk.args)
            if do_while:
                self.loop_body(ctx, body, step)
            (c,) = self.lower_as(cond, T.BOOL)
            self.loops.append(LoopCtx(ctx.brk, None))
            c = self.v(arith.AndIOp(c, self.running()))
            self.loops.pop()
            self.emit(scf.ConditionOp(c, *self.flat(keys)))

        def after():
            self.bind_args(keys, after_blk.args)
            if not do_while:
                self.loop_body(ctx, body, step)
            self.emit(scf.YieldOp(*self.flat(keys)))

        self.in_block(before_blk, before)
        self.restore(snap)
        self.in_block(after_blk, after)
        self.restore(snap)
        op = self.emit(scf.WhileOp(init, types, Region(before_blk), Region(after_blk)))
        self.loop_attrs(op, attrs)
        if bound is not None and diff.MAX_ITERS not in op.attributes:
            # (a loop that never runs still gets a bound the tape can have: 1 covers it)
            op.attributes[diff.MAX_ITERS] = IntegerAttr(max(bound, 1), 64)
        self.assign_results(keys, list(op.results))

    def loop_attrs(self, op, attrs: list[A.Attr]) -> None:
        for a in attrs:
            if a.name == "MaxIters" and a.args and isinstance(a.args[0], A.Num):
                op.attributes[diff.MAX_ITERS] = IntegerAttr(int(a.args[0].value), 64)
            if a.name == "ForceUnroll":
                op.attributes["diffc.unroll"] = UnitAttr()


def _same(a: list[SSAValue], b: list[SSAValue]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
