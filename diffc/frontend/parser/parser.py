"""Recursive-descent parser for the Slang subset: tokens -> `ast.Program`, spans on every node."""

from __future__ import annotations

import copy
import re

from diffc.frontend import ast as A
from diffc.frontend.errors import SYNTAX, UNDEFINED, UNSUPPORTED, FrontendError
from diffc.frontend import feature
from diffc.frontend.checker.inits import INIT, constructor_method
from diffc.frontend.parser.library import REFUSED_LIBRARY_NAMES
from diffc.frontend.parser.namespaces import qualify as qualify_namespaced
from diffc.frontend.source.lexer import Token, tokenize

SCALARS = {"float", "half", "double", "int", "uint", "bool", "void",
           "int8_t", "uint8_t", "int16_t", "uint16_t", "int64_t", "uint64_t"}
# Fixed-width spellings of the scalars (Slang's stdint-style names).
SCALAR_ALIASES = {"uint32_t": "uint", "int32_t": "int", "float32_t": "float", "float16_t": "half",
                  "float64_t": "double"}
_SIZED_ALIAS = re.compile(r"^(uint32_t|int32_t|float32_t|float16_t|float64_t)([1-4](?:x[1-4])?)$")


def canonical_type_name(name: str) -> str:
    """The built-in spelling of a fixed-width name: `uint32_t` -> `uint`, `uint32_t3` -> `uint3`,
    `float16_t2x2` -> `half2x2`; other names as they are."""
    if name in SCALAR_ALIASES:
        return SCALAR_ALIASES[name]
    m = _SIZED_ALIAS.match(name)
    return SCALAR_ALIASES[m.group(1)] + m.group(2) if m else name


GENERIC_TYPES = {"DifferentialPair", "DifferentialPtrPair", "RWStructuredBuffer", "StructuredBuffer", "Atomic", "vector", "Ptr",
                 "CoopVec", "Optional",
                 "matrix", "Array", "Texture2D", "RWTexture2D", "ParameterBlock",
                 "Ref", "ConstRef"}  # (a texture's <T> may be left out; Ref and ConstRef: ref_params.py)
RESOURCE_TYPES = {"SamplerState", "NativeString", "ByteAddressBuffer", "RWByteAddressBuffer"}  # features/textures.py,
# native_strings.py, byte_address_buffers.py
_VEC = re.compile(r"^(float|half|double|int|uint|bool|u?int(?:8|16|64)_t)([1-4])$")
_MAT = re.compile(r"^(float|half|double|int|uint|bool)([1-4])x([1-4])$")
PARAM_MODS = {"in", "out", "inout", "no_diff", "const", "uniform", "__constref", "constexpr"}
# Matrix layout qualifiers: values are the same either way (memory layout is row-major).
MATRIX_LAYOUTS = {"row_major", "column_major"}
# Slang types this front end knows of but does not support: E0008 naming them, not "unknown".
UNSUPPORTED_TYPES = {"Texture1D", "Texture3D", "TextureCube", "Texture2DArray", "RWTexture1D",
                     "RWTexture3D", "SamplerComparisonState",
                     "ConstantBuffer"}
CALL_METHOD = "__call"  # the method a struct's `operator()` declares: calling a value of it calls this
MAX_NESTING = 256  # expressions and prefix operators inside each other
MAX_STATEMENT_NESTING = 128  # statements (if, loops, blocks): each a region of IR, walked recursively
# Slang modifiers that change nothing here: `override` marks a method that replaces an
# interface's default (the struct's own method is what a call finds anyway); `constexpr` a value
# that is a compile-time constant (constants are folded where sizes need them).
NO_EFFECT_MODS = {"override", "constexpr"}
GLOBAL_MODS = {"static", "const", "uniform", "groupshared", "no_diff"} | NO_EFFECT_MODS

# Attributes that change what a program means and that this front end does not implement: each
# is a located E0008 (attributes not named here, such as [ForceInline], change no result and are
# accepted and ignored).
REFUSED_ATTRS = {"DerivativeMember"}
# attributes of functions, structs and fields, which Slang refuses on a statement
DECLARATION_ATTRS = {"Differentiable", "BackwardDifferentiable", "ForwardDifferentiable", "TreatAsDifferentiable",
                     "BackwardDerivative", "ForwardDerivative", "BackwardDerivativeOf", "ForwardDerivativeOf",
                     "PrimalSubstitute", "PrimalSubstituteOf", "PreferRecompute", "PreferCheckpoint",
                     "numthreads", "shader", "mutating", "NoDiffThis", "DerivativeMember", "CUDAKernel",
                     "AutoPyBindCUDA"}
IMPORT_WORDS = {"import", "__include", "module", "implementing"}  # imports.py reads the files
# the standard library's interfaces, as names (values of these types are refused: interfaces.py)
BUILTIN_INTERFACE_NAMES = {"IDifferentiable", "IFloat", "IArithmetic", "IInteger", "IComparable",
                           "IDifferentiablePtrType", "IDefaultInitializable", "IArray", "IRealArray",
                           "IFloatArray", "__BuiltinFloatingPointType", "__BuiltinRealType",
                           "__BuiltinArithmeticType", "__BuiltinType", "__BuiltinIntegerType",
                           "__BuiltinSignedArithmeticType"}
KEYWORDS = {"if", "else", "for", "while", "do", "return", "break", "continue", "switch", "case",
            "default", "no_diff", "true", "false", "let", "var", "const"}
BINARY_PREC = [
    ["||"],
    ["&&"],
    ["|"],
    ["^"],
    ["&"],
    ["==", "!="],
    ["<", ">", "<=", ">="],
    ["<<", ">>"],
    ["+", "-"],
    ["*", "/", "%"],
]
TYPE_TEST_LEVEL = 6  # `is` / `as` bind as the relational operators
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}


def refuse_attrs(attrs: list[A.Attr]) -> None:
    for a in attrs:
        if a.name in REFUSED_ATTRS:
            raise FrontendError(UNSUPPORTED, f"[{a.name}] is not supported on a function", a.span[0], a.span[1])


def derivative_member(attrs: list[A.Attr]) -> tuple[str, A.Span] | None:
    """A field's `[DerivativeMember(Differential.f)]`: the name of the field of the struct's own
    Differential type that holds its derivative."""
    for a in attrs:
        if a.name == "DerivativeMember":
            arg = a.args[0] if len(a.args) == 1 else None
            if not isinstance(arg, A.Member):
                raise FrontendError(SYNTAX, "[DerivativeMember] takes one field of the Differential type, as in "
                                    "[DerivativeMember(Differential.x)]", a.span[0], a.span[1])
            return arg.name, a.span
    return None


def is_builtin_type_name(name: str) -> bool:
    name = canonical_type_name(name)
    return name in SCALARS or name in GENERIC_TYPES or name in RESOURCE_TYPES or bool(_VEC.match(name) or _MAT.match(name))


def declared_type_names(toks: list[Token], types: set[str], interfaces: set[str], generic_structs: set[str],
                        enums: set[str]) -> None:
    """Adds the names of the structs, interfaces and enums declared in `toks` to the sets, and of
    the typealiases extensions declare (`extension<M : IModel<I, O>> M { typealias In = I; }`
    gives every conforming struct a member type, which its own body may name)."""
    extension_depth = depth = 0
    for i in range(len(toks) - 1):
        kw, name = toks[i], toks[i + 1]
        if kw.text == "extension" and not extension_depth:
            extension_depth = -1  # (its body starts at the next `{`)
        elif kw.text == "{":
            depth += 1
            extension_depth = depth if extension_depth == -1 else extension_depth
        elif kw.text == "}":
            extension_depth = 0 if depth == extension_depth else extension_depth
            depth -= 1
        elif kw.text == "typealias" and extension_depth > 0 and name.kind == "ident":
            types.add(name.text)
        if kw.kind != "ident" or name.kind != "ident" or kw.text not in ("struct", "interface", "enum"):
            continue
        if kw.text == "interface":
            interfaces.add(name.text)
        elif kw.text == "enum":  # `enum E`, `enum class E`: an integer type (generic value parameters may have it)
            named = toks[i + 2] if name.text in ("class", "struct") and i + 2 < len(toks) else name
            enums.add(named.text)
            types.add(named.text)
        else:
            types.add(name.text)
            if i + 2 < len(toks) and toks[i + 2].text == "<" and kw.text == "struct":
                generic_structs.add(name.text)


def imported_names(toks: list[Token]) -> list[tuple[str, str, bool]]:
    """The (kind, name, quoted) of each `import` / `__include` / `implementing` in `toks`."""
    out = []
    for i, t in enumerate(toks[:-1]):
        if t.kind != "ident" or t.text not in IMPORT_WORDS or t.text == "module" or (i and toks[i - 1].text == "."):
            continue
        nxt = toks[i + 1]
        if nxt.kind == "string":
            out.append((t.text, str(nxt.value), True))
        elif nxt.kind == "ident":
            parts, k = [nxt.text], i + 2
            while k + 1 < len(toks) and toks[k].text == "." and toks[k + 1].kind == "ident":
                parts.append(toks[k + 1].text)
                k += 2
            out.append((t.text, ".".join(parts), False))
    return out


class Parser:
    def __init__(self, text: str, filename: str, base: int = 0, toks: list[Token] | None = None):
        """`base`: where this file's offsets start in a program of several files (imports.py);
        `toks`: the text's tokens where the caller has lexed it already (from offset 0; taken over)."""
        self.text = text
        try:
            self.toks = toks if toks is not None else tokenize(text, filename)
        except FrontendError as e:
            e.start, e.end = e.start + base, e.end + base
            raise
        if base:
            for t in self.toks:
                t.start, t.end = t.start + base, t.end + base
        self.loader = None  # imports.Loader: reads the files that `import` and `__include` name
        self.i = 0
        # interfaces may be named before their declaration (a function's parameter, a struct's base)
        self.interfaces: set[str] = set(BUILTIN_INTERFACE_NAMES) | {
            b.text for a, b in zip(self.toks, self.toks[1:]) if a.text == "interface" and b.kind == "ident"}
        self.type_names: set[str] = {"This"}
        self.scoped_type_names: list[str] = []  # type parameters of the declarations being parsed
        self.generic_defaults: dict[str, A.Node] = {}  # default values of the generic parameters just parsed
        self.generic_structs: set[str] = set()
        self.generic_bases: list[A.TypeRef] = []  # the bases with generic arguments just parsed (conformances)
        self.enum_names: set[str] = set()
        # namespaces (this file's and, through the loader, earlier files'): `ns::f` and `ns.f` are f
        self.namespaces: set[str] = set()
        self.namespace_clashes: dict[str, set[str]] = {}  # (namespaces.py: the loader finds them)
        self.interface_aliases: dict[str, str] = {}  # `typealias IReal = IFloat;`: IReal -> IFloat
        self.hoisted: list[A.Node] = []  # groupshared locals as globals (shared_local), nested structs
        self.find_namespaces()
        self.depth = 0  # nesting of expressions and prefix operators (see nested())
        self.stmt_depth = 0  # nesting of statements inside statements

    # ---- namespaces ----
    def find_namespaces(self) -> None:
        """`namespace a.b {`, `namespace a::b {`: the names, whose qualifiers strip_qualifiers drops."""
        toks = self.toks
        for i, t in enumerate(toks):
            if t.kind == "ident" and t.text == "namespace" and toks[i + 1].kind == "ident":
                k = i + 1
                while toks[k].kind == "ident":
                    self.namespaces.add(toks[k].text)
                    if toks[k + 1].text not in (".", "::"):
                        break
                    k += 2

    def strip_qualifiers(self) -> None:
        """Drops `ns::` and `ns.` (ns a namespace) from the tokens not yet parsed: a namespace's
        declarations join the one program, so a qualified name is the name itself. (Two namespaces
        declaring the same name then collide, as two files importing it would.)"""
        if not self.namespaces and not self.interface_aliases:
            return
        out = self.toks[: self.i]
        rest = self.toks[self.i:]
        k = 0
        while k < len(rest):
            t = rest[k]
            prev = out[-1].text if out else ""
            qualified = prev in (".", "::", "->")
            if (t.kind == "ident" and t.text in self.namespaces and k + 1 < len(rest)
                    and rest[k + 1].text in ("::", ".") and not qualified and prev != "namespace"):
                k += 2
                continue
            if (t.kind == "ident" and t.text in self.interface_aliases and not qualified
                    and prev != "typealias" and prev not in IMPORT_WORDS):  # (`__include IReal;` names a file)
                t = Token("ident", self.interface_aliases[t.text], t.start, t.end)
            out.append(t)
            k += 1
        self.toks = out

    def interface_alias(self, name: Token, start: int) -> A.Program:
        """`typealias IReal = IFloat;`: a second name of an interface (a constraint, a base), the
        interface itself from here on and in the files that import this one."""
        target = self.ident("an interface name").text
        self.expect(";")
        self.interface_aliases[name.text] = self.interface_aliases.get(target, target)
        self.interfaces.add(name.text)
        self.strip_qualifiers()
        return A.Program([], span=self.span_from(start))

    def namespace_decl(self, start: int) -> A.Program:
        """`namespace a { ... }` (also `a.b`, `a::b`): its declarations, spliced into the program."""
        self.expect("namespace")
        self.ident("a namespace name")
        while self.accept(".") or self.accept("::"):
            self.ident("a namespace name")
        self.expect("{")
        decls: list[A.Node] = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                self.error("expected '}'")
            mark = len(self.scoped_type_names)
            d = self.top_decl()
            decls.extend(d.decls if isinstance(d, A.Program) else [d])
            self.end_generic(mark)
        return A.Program(decls, span=self.span_from(start))

    def using_decl(self, start: int) -> A.Program:
        """`using namespace a;` / `using a;`: the names are visible unqualified anyway."""
        self.expect("using")
        self.accept("namespace")
        self.ident("a namespace name")
        while self.accept(".") or self.accept("::"):
            self.ident("a namespace name")
        self.expect(";")
        return A.Program([], span=self.span_from(start))

    # ---- token helpers ----
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def at(self, text: str) -> bool:
        t = self.tok
        return t.kind in ("punct", "ident") and t.text == text

    def accept(self, text: str) -> Token | None:
        if self.at(text):
            t = self.tok
            self.i += 1
            return t
        return None

    def error(self, msg: str, tok: Token | None = None):
        t = tok or self.tok
        found = "end of file" if t.kind == "eof" else f"'{t.text}'"
        raise FrontendError(SYNTAX, f"{msg}, found {found}", t.start, max(t.end, t.start + 1))

    def nested(self, parse, statements: bool = False):
        """Runs `parse` one nesting level deeper: past the caps the recursive descent (and the
        checker, lowering and xDSL's region walks after it) would exhaust Python's stack."""
        cap = MAX_STATEMENT_NESTING if statements else MAX_NESTING
        depth = self.stmt_depth if statements else self.depth
        if depth >= cap:
            what = "statements" if statements else "expressions"
            raise FrontendError(UNSUPPORTED, f"{what} nested more than {cap} levels deep", self.tok.start,
                                max(self.tok.end, self.tok.start + 1))
        if statements:
            self.stmt_depth += 1
        else:
            self.depth += 1
        try:
            return parse()
        finally:
            if statements:
                self.stmt_depth -= 1
            else:
                self.depth -= 1

    def expect(self, text: str) -> Token:
        if text == ">" and self.at(">>"):  # split '>>' closing two generic lists
            t = self.tok
            self.toks[self.i] = Token("punct", ">", t.start + 1, t.end)
            return Token("punct", ">", t.start, t.start + 1)
        t = self.accept(text)
        if t is None:
            self.error(f"expected '{text}'")
        return t  # type: ignore[return-value]

    def ident(self, what: str = "an identifier") -> Token:
        t = self.tok
        if t.kind != "ident":
            self.error(f"expected {what}")
        self.i += 1
        return t

    def span_from(self, start: int) -> A.Span:
        return (start, self.toks[self.i - 1].end)

    def is_type_name(self, name: str) -> bool:
        return (is_builtin_type_name(name) or name in self.type_names or name in self.interfaces
                or name in MATRIX_LAYOUTS or name in UNSUPPORTED_TYPES)  # the last ones: so that type_ref names them

    def is_member_type(self, t: Token) -> bool:
        """`T.Differential`, `T.A` (an associated type or a struct's typealias), not `T.dzero()`."""
        if t.kind != "ident":
            return False
        if t.text in ("Differential", "DifferentialElementType"):  # never a method: `S.Differential(x)` constructs one
            return True
        if t.text == "Handle":  # `RWStructuredBuffer<float>.Handle`: a bindless handle of a resource
            return self.peek(2).text != "("
        return self.peek(2).text != "(" and t.text in self.type_names

    # ---- top level ----
    def parse_program(self) -> A.Program:
        self.toks = qualify_namespaced(self.toks, self.namespace_clashes, self.namespaces)
        self.strip_qualifiers()
        self.prescan_type_names()
        decls: list[A.Node] = []
        for part in feature.preludes() if self.loader is not None else ():  # (the features' Tuple, CoopVec's enums)
            if any(t.kind == "ident" and t.text in part.words for t in self.toks):
                decls += self.loader.prelude(part)
        while self.tok.kind != "eof":
            mark = len(self.scoped_type_names)
            d = self.top_decl()
            decls.extend(self.hoisted)  # groupshared locals of d's functions (shared_local)
            self.hoisted.clear()
            decls.extend(d.decls if isinstance(d, A.Program) else [d])  # an import: its file's declarations
            self.end_generic(mark)
        return A.Program(decls, span=(0, len(self.text)))

    def prescan_type_names(self) -> None:
        """The structs, interfaces and enums this file declares, known as types from its first line:
        Slang's declarations are order-free (a typedef may name a struct declared further down)."""
        declared_type_names(self.toks, self.type_names, self.interfaces, self.generic_structs, self.enum_names)

    def declaration_attributes(self) -> list[A.Attr]:
        """A declaration's attributes, with the modifiers that features accept and drop
        (feature.modifiers()) anywhere among them."""
        attrs: list[A.Attr] = []
        dropped = feature.modifiers()
        while True:
            if self.tok.kind == "ident" and self.tok.text in dropped:
                self.i += 1
            elif self.at("["):
                attrs += self.attributes()
            else:
                return attrs

    def attributes(self) -> list[A.Attr]:
        attrs = []
        while self.at("["):
            self.i += 1
            while True:
                name = self.ident("an attribute name")
                args: list[A.Expr] = []
                if self.accept("("):
                    if not self.at(")"):
                        args.append(self.expr())
                        while self.accept(","):
                            args.append(self.expr())
                    self.expect(")")
                attrs.append(A.Attr(name.text, args, span=self.span_from(name.start)))
                if not self.accept(","):
                    break
            self.expect("]")
        return attrs

    def top_decl(self) -> A.Node:
        start = self.tok.start
        if self.accept(";"):
            return self.top_decl() if self.tok.kind != "eof" else A.Program([], span=(start, start))
        attrs = self.declaration_attributes()
        if self.at("dyn") and self.peek().text == "interface":  # `dyn interface`: every use dispatches
            self.i += 1  # dynamically, which an interface-typed value here does anyway (dynamic.py)
        if self.at("struct"):
            return self.struct()
        if self.starts_import():
            program = self.import_decl(start)
            self.strip_qualifiers()  # the imported files' namespaces
            return program
        if self.at("namespace") and self.peek().kind == "ident":
            return self.namespace_decl(start)
        if self.at("using") and self.peek().kind == "ident":
            return self.using_decl(start)
        declaration = feature.declarations().get(self.tok.text) if self.tok.kind == "ident" else None
        if declaration is not None:
            return declaration(self, attrs, start)
        if self.at("interface"):
            iface = self.interface()
            iface.attrs = attrs
            return iface
        if self.at("extension"):
            return self.extension()
        if self.at("__generic"):
            return self.generic_prefixed(attrs, set(), start)
        if self.accept("typedef"):
            t = self.type_ref()
            name = self.ident("a type name")
            self.expect(";")
            self.type_names.add(name.text)
            return A.Typedef(t, name.text, span=self.span_from(start))
        if self.at("typealias"):
            self.i += 1
            name = self.ident("a type name")
            self.expect("=")
            if self.tok.text in self.interfaces and self.peek().text == ";":
                return self.interface_alias(name, start)
            t = self.type_ref()
            self.expect(";")
            self.type_names.add(name.text)
            return A.Typedef(t, name.text, span=self.span_from(start))
        mods = set()
        dropped = feature.modifiers()
        while self.tok.kind == "ident" and self.tok.text in GLOBAL_MODS | {"inline"} | dropped:
            if self.tok.text not in dropped:
                mods.add(self.tok.text)
            self.i += 1
        if self.at("struct"):
            return self.struct()
        if self.at("enum"):
            return self.enum(start)
        self.prescan_generics()
        t = self.array_dims(self.type_ref(), type_position=True)
        if (decl := self.declarator(attrs, mods, t, start)) is not None:
            return decl
        name = self.ident("a name")
        if self.at("(") or self.at("<"):
            return self.function(attrs, mods, t, name, start)
        t = self.array_dims(t, unsized_ok=True)  # `static const float W[3] = {...};`
        init = self.expr() if self.accept("=") else None
        t = self.sized_by_init(t, init)
        self.expect(";")
        return A.Global(mods, t, name.text, init, span=self.span_from(start))

    def at_declarator(self, k: int = 0) -> bool:
        """At a declaration's name that a feature parses (`operator +`: operators.py)."""
        return any(at(self, k) for at in feature.hooks("declarator_at"))

    def declarator(self, attrs, mods: set[str], ret: A.TypeRef, start: int, prefix=None) -> A.Node | None:
        """After a declaration's type: the declaration a feature parses from here, or None."""
        for f in feature.installed():
            if f.declarator_at is not None and f.declarator_at(self, 0):
                return f.parse_declarator(self, attrs, mods, ret, start, prefix)
        return None

    def member(self, mods: set[str], start: int, requirement: bool, prefix=None) -> list[A.Func] | None:
        """At a struct or interface member a feature parses (`__subscript`, `property`): its
        methods, or None."""
        parse = feature.members().get(self.tok.text) if self.tok.kind == "ident" else None
        return None if parse is None else parse(self, mods, start, requirement, prefix)

    def refuse_member_operator(self) -> None:
        if self.at_declarator():
            t, op = self.tok, self.peek()
            raise FrontendError(UNSUPPORTED, f"operator overloading in a struct or interface ('operator{op.text}') "
                                "is not supported: declare the operator as a free function", t.start, op.end)

    def starts_import(self) -> bool:
        k = 0
        while self.peek(k).text in {"__exported"} | feature.modifiers():
            k += 1
        t, nxt = self.peek(k), self.peek(k + 1)
        return t.kind == "ident" and t.text in IMPORT_WORDS and (nxt.kind == "string" or nxt.kind == "ident")

    def import_decl(self, start: int) -> A.Program:
        """`[__exported] import a.b;`, `import "file";`, `__include x;`, `module x;`, `implementing x;`:
        the declarations the loader reads from that file, as a Program to splice in."""
        while self.tok.text in {"__exported"} | feature.modifiers():
            self.i += 1
        kind = self.ident().text
        if self.tok.kind == "string":
            name, quoted = str(self.tok.value), True
            self.i += 1
        else:
            parts = [self.ident("a module name").text]
            while self.accept("."):
                parts.append(self.ident("a module name").text)
            name, quoted = ".".join(parts), False
        self.expect(";")
        span = self.span_from(start)
        if self.loader is None:
            raise FrontendError(UNSUPPORTED, f"'{kind}' is not supported here (no file to read it from)", *span)
        return A.Program(self.loader.load(kind, name, quoted, span), span=span)

    def enum(self, start: int) -> A.Enum:
        """`enum [class] Name [: T] { A, B = 5, C }`."""
        self.expect("enum")
        scoped = bool(self.accept("class"))
        name = self.ident("an enum name")
        self.type_names.add(name.text)
        base = self.type_ref() if self.accept(":") else None
        self.expect("{")
        cases: list[A.EnumCase] = []
        while not self.accept("}"):
            case = self.ident("an enum case name")
            value = self.assignment() if self.accept("=") else None
            cases.append(A.EnumCase(case.text, value, span=self.span_from(case.start)))
            if not self.accept(","):
                self.expect("}")
                break
        self.accept(";")
        return A.Enum(name.text, cases, base, scoped, span=self.span_from(start))

    def generic_params(self) -> tuple[list[str], dict[str, list[str]]]:
        """`<int N, let M : int, T, U : IFoo & IBar>` after a struct or function name (or in
        `__generic<...>`): the parameter names in order and, for each type parameter, the
        interfaces it must conform to. Type parameters become type names until `end_generic`."""
        names: list[str] = []
        type_params: dict[str, list[str]] = {}
        if not self.accept("<"):
            return names, type_params
        while True:
            t = self.ident("a generic parameter")
            if t.text == "each":
                raise FrontendError(UNSUPPORTED, "variadic generic parameters ('each') are not supported",
                                    t.start, t.end)
            if t.text in ("int", "uint"):
                names.append(self.ident("a generic parameter name").text)
            elif t.text == "let":
                names.append(self.ident("a generic parameter name").text)
                self.expect(":")
                kind = self.ident("'int'")
                # an enum is its integer type: its parameter takes the cases' values
                if kind.text not in ("int", "uint") and kind.text not in self.enum_names:
                    raise FrontendError(UNSUPPORTED, f"generic value parameters of type '{kind.text}' are not "
                                        "supported (only integers and enums)", kind.start, kind.end)
            else:
                if t.text == "typename":
                    t = self.ident("a generic parameter name")
                names.append(t.text)
                type_params[t.text] = self.conformances() if self.accept(":") else []
                if t.text not in self.type_names or t.text in self.scoped_type_names:
                    self.scoped_type_names.append(t.text)  # (a global type of this name stays one after)
                    self.type_names.add(t.text)
            if self.accept("="):  # `int M = N - 1`, `T = float`: used when an instance does not give it
                p = names[-1]
                self.generic_defaults[p] = self.array_dims(self.type_ref()) if p in type_params else self.binary(8)
            if not self.accept(",") or self.at(">"):  # (Slang accepts a trailing comma)
                break
        self.expect(">")
        return names, type_params

    def prescan_generics(self) -> None:
        """`T f<T>(T x)`: the result type names a type parameter declared after it. When a
        function's generic parameters follow its name, they are type names from its result type on
        (the caller ends them with the declaration)."""
        k = 0
        while self.peek(k).kind == "ident" and self.peek(k + 1).text == ".":
            k += 2
        if self.peek(k).kind != "ident":
            return
        k += 1
        if self.peek(k).text == "<":  # `vector<T, N> f<T>(...)`: skip the result's own arguments
            depth = 0
            while self.peek(k).kind != "eof":
                depth += {"<": 1, ">": -1, ">>": -2}.get(self.peek(k).text, 0)
                k += 1
                if depth <= 0:
                    break
        while self.peek(k).text in ("[", "*"):
            while self.peek(k).text not in ("]", "*") and self.peek(k).kind != "eof":
                k += 1
            k += 1
        named = self.peek(k).kind == "ident"
        if self.at_declarator(k):  # `T operator +<T>(...)`: the operator's symbol stands where a name would
            k, named = k + 1, True
        if named and self.peek(k + 1).text == "<":
            save, toks = self.i, list(self.toks)  # parsing splits '>>' in place: undo it after
            self.i += k + 1
            try:
                self.generic_params()
            except FrontendError:
                pass
            self.i, self.toks = save, toks

    def conformances(self) -> list[str]:
        """`IFoo`, `IFoo & IBar`, `IModel<float[2]>`: interface names (conformance is by name; a
        generic interface's instance goes to `generic_bases`, for dynamic dispatch over it)."""
        out = [self.ident("an interface name").text]
        while True:
            if self.at("<"):  # (kept aside for dynamic dispatch over the instance: dynamic.py)
                at = self.tok.start
                self.generic_bases.append(A.TypeRef(out[-1], self.generic_args(), span=self.span_from(at)))
            if not self.accept("&"):
                return out
            out.append(self.ident("an interface name").text)

    def bases(self) -> list[str]:
        """`: IFoo, IDifferentiable` after a struct, interface or extension name."""
        out: list[str] = []
        if self.accept(":"):
            out += self.conformances()
            while self.accept(","):
                out += self.conformances()
        return out

    def where_clauses(self, type_params: dict[str, list[str]]) -> None:
        """`where T : IFoo` (several, each after its own `where`, or joined by `,`)."""
        while self.at("where"):
            self.i += 1
            while True:
                if self.peek().text in (".", "=="):  # `where T.Differential == T`: assumed, not checked
                    self.type_ref()
                    if self.accept(":"):  # `where T.Differential : IAtomicAddable`: also assumed
                        self.conformances()
                    else:
                        self.expect("==")
                        self.type_ref()
                    if not self.accept(","):
                        break
                    continue
                name = self.ident("a generic parameter name")
                if name.text not in type_params:
                    raise FrontendError(UNDEFINED, f"'{name.text}' in 'where' is not a generic type parameter",
                                        name.start, name.end)
                self.expect(":")
                type_params[name.text] += self.conformances()
                while self.at(",") and self.peek().kind == "ident" and self.peek(2).text not in (":", ".", "=="):
                    self.i += 1  # `where T : IFoo, IBar`: T conforms to both
                    type_params[name.text] += self.conformances()
                if not (self.at(",") and self.peek().kind == "ident" and self.peek(2).text == ":"):
                    break
                self.i += 1

    def end_generic(self, mark: int) -> None:
        """Type parameters declared since `mark` stop being type names (their declaration ended)."""
        while len(self.scoped_type_names) > mark:
            name = self.scoped_type_names.pop()
            if name not in self.scoped_type_names:
                self.type_names.discard(name)

    def struct(self, prefix: tuple[list[str], dict[str, list[str]]] | None = None) -> A.Struct:
        """A struct; `prefix`: the parameters of a `__generic<...>` before it."""
        mark = len(self.scoped_type_names)  # (a `__generic` prefix's parameters are ended by its parser)
        start = self.expect("struct").start
        name = self.ident("a struct name")
        self.type_names.add(name.text)
        gparams, type_params = self.generic_params()
        if prefix:
            gparams, type_params = prefix[0] + gparams, {**prefix[1], **type_params}
        if gparams:
            self.generic_structs.add(name.text)
        self.generic_bases = []
        bases = self.bases()
        generic_bases = self.generic_bases
        self.where_clauses(type_params)
        if "IDifferentiable" in bases:
            self.type_names.add("Differential")  # inside, `Differential` is the struct's (checker)
        self.expect("{")
        fields: list[A.Field] = []
        methods: list[A.Func] = []
        aliases: list[A.Typedef] = []
        while not self.accept("}"):
            fstart = self.tok.start
            head = self.member_head()
            if head is None:
                continue
            attrs, mods = head
            if (declared := self.member(mods, fstart, requirement=False)) is not None:
                methods.extend(declared)
                continue
            if self.at("typedef") or self.at("typealias"):
                if self.accept("typedef"):  # `typedef T Name;`
                    at = self.array_dims(self.type_ref(), type_position=True)
                    aname = self.ident("a type name")
                else:  # `typealias Name = T;`
                    self.i += 1
                    aname = self.ident("a type name")
                    self.expect("=")
                    at = self.array_dims(self.type_ref(), type_position=True)
                self.expect(";")
                self.type_names.add(aname.text)
                aliases.append(A.Typedef(at, aname.text, span=self.span_from(fstart)))
                continue
            if self.at(INIT) and self.peek().text in ("(", "<"):  # (`__init<T : I>(T v)`: a generic one)
                ctor = self.function(attrs, mods, A.TypeRef(name.text), self.ident(), fstart)
                methods.append(constructor_method(ctor, name.text, gparams))
                continue
            if self.at("__generic"):
                decl = self.generic_prefixed(attrs, mods, fstart)
                methods.extend(decl) if isinstance(decl, list) else methods.append(decl)
                continue
            self.prescan_generics()
            if self.at("struct") or self.at("interface") or self.at("extension"):
                raise FrontendError(UNSUPPORTED, f"a nested '{self.tok.text}' declaration is not supported",
                                    self.tok.start, self.tok.end)
            t = self.array_dims(self.type_ref(), type_position=True)
            if self.at("operator") and self.peek().text == "(" and self.peek(2).text == ")":
                # `void operator()(...)`: calling a value of the struct calls this method
                op, close = self.tok, self.peek(2)
                self.i += 3
                fname = Token("ident", CALL_METHOD, op.start, close.end)
                methods.append(self.function(attrs, mods, t, fname, fstart))
                continue
            self.refuse_member_operator()
            fname = self.ident("a field name")
            if self.at("(") or self.at("<"):
                methods.append(self.function(attrs, mods, t, fname, fstart))
                continue
            member = derivative_member(attrs)
            while True:
                ft = self.array_dims(t)
                self.field_semantic()
                init = self.assignment() if self.accept("=") else None
                fields.append(A.Field(mods, ft, fname.text, init, member, span=self.span_from(fstart)))
                if not self.accept(","):
                    break
                fname = self.ident("a field name")
            self.expect(";")
        self.accept(";")
        self.end_generic(mark)
        return A.Struct(name.text, bases, fields, methods, gparams, aliases, type_params, self.defaults_of(gparams),
                        generic_bases, span=self.span_from(start))

    def function(self, attrs, ret_mods, ret, name: Token, start: int, arrow_result: bool = False,
                 prefix: tuple[list[str], dict[str, list[str]]] | None = None) -> A.Func:
        """From the generic parameters on; `arrow_result`: the result type may follow as `-> T`;
        `prefix`: the generic parameters of a `__generic<...>` before the declaration."""
        refuse_attrs(attrs)
        mark = len(self.scoped_type_names)  # (a `__generic` prefix's parameters are ended by its parser)
        outer_bases, self.generic_bases = self.generic_bases, []  # (a method's, apart from its struct's)
        gparams, type_params = self.generic_params()
        if prefix:
            gparams, type_params = prefix[0] + gparams, {**prefix[1], **type_params}
        params = self.param_list()
        if arrow_result and self.accept("->"):
            ret = self.array_dims(self.type_ref(), type_position=True)
        if self.accept(":"):
            self.ident("a semantic")
        self.where_clauses(type_params)
        param_bases, self.generic_bases = self.generic_bases, outer_bases
        body = None if self.accept(";") else self.block()
        self.end_generic(mark)
        return A.Func(attrs, ret_mods, ret, name.text, params, body,
                      span=self.span_from(start), name_span=(name.start, name.end),
                      generic_params=gparams, mods=set(ret_mods), type_params=type_params,
                      generic_defaults=self.defaults_of(gparams), param_bases=param_bases)

    def field_semantic(self) -> None:
        """`float4 pos : SV_Position;`: a vertex or fragment stage's binding of a field, which names
        no memory here (no rasterizer stage), so it is read and dropped. `uint x : 3;`, a bit field,
        is refused."""
        if not self.at(":"):
            return
        if self.peek().kind == "int":
            colon = self.tok
            raise FrontendError(UNSUPPORTED, "bit fields ('field : width') are not supported", colon.start,
                                self.peek().end)
        self.i += 1
        self.ident("a semantic")

    def param_list(self) -> list[A.Param]:
        """`(T a, inout U b = d, ...)`, parentheses included."""
        self.expect("(")
        params: list[A.Param] = []
        if not self.at(")"):
            while True:
                pstart = self.tok.start
                mods = set()
                while self.tok.kind == "ident" and self.tok.text in PARAM_MODS:
                    mods.add(self.tok.text)
                    self.i += 1
                pt = self.array_dims(self.type_ref(), type_position=True)
                if self.at(",") or self.at(")"):  # `float f(float, float);`: a parameter without a name
                    pname = Token("ident", f"_param{len(params)}", self.tok.start, self.tok.start)
                else:
                    pname = self.ident("a parameter name")
                pt = self.array_dims(pt)
                semantic = self.ident("a semantic").text if self.accept(":") else None
                default = self.assignment() if self.accept("=") else None
                params.append(A.Param(mods, pt, pname.text, semantic, default, span=self.span_from(pstart)))
                if not self.accept(",") or self.at(")"):  # Slang accepts a trailing comma
                    break
        self.expect(")")
        return params

    def defaults_of(self, gparams: list[str]) -> dict[str, A.Node]:
        return {p: self.generic_defaults.pop(p) for p in gparams if p in self.generic_defaults}

    def generic_prefixed(self, attrs, mods: set[str], start: int, requirement: bool = False) -> A.Node | list[A.Func]:
        """`__generic<T : IFoo> struct S ...` or `__generic<T> T f(T x) ...`: the parameters
        belong to the declaration that follows."""
        self.expect("__generic")
        mark = len(self.scoped_type_names)
        prefix = self.generic_params()
        attrs = attrs + self.declaration_attributes()
        dropped = feature.modifiers()
        while self.tok.kind == "ident" and self.tok.text in GLOBAL_MODS | {"inline"} | dropped:
            if self.tok.text not in dropped:
                mods = mods | {self.tok.text}
            self.i += 1
        if self.at("struct"):
            decl: A.Node | list[A.Func] = self.struct(prefix)
        elif (declared := self.member(mods, start, requirement, prefix)) is not None:
            decl = declared  # `__generic<I : IInteger> __subscript(I i) -> T {...}`
        else:
            self.prescan_generics()
            t = self.array_dims(self.type_ref())
            found = self.declarator(attrs, mods, t, start, prefix)
            decl = found if found is not None else self.function(attrs, mods, t, self.ident("a name"), start,
                                                                  prefix=prefix)
        self.end_generic(mark)
        return decl

    def member_head(self) -> tuple[list[A.Attr], set[str]] | None:
        """At a member of a struct or interface body: its attributes and modifiers, or None for
        a stray ';' (skipped)."""
        if self.tok.kind == "eof":
            self.error("expected '}'")
        if self.accept(";"):
            return None
        attrs = self.declaration_attributes()
        mods: set[str] = set()
        dropped = feature.modifiers()
        while self.tok.kind == "ident" and self.tok.text in PARAM_MODS | GLOBAL_MODS | {"extern"} | dropped:
            if self.tok.text not in dropped:
                mods.add(self.tok.text)
            self.i += 1
        return attrs, mods

    def skip_requirement(self) -> None:
        """Past `__init(...);` or `property T name { get; set; }` in an interface."""
        depth = 0
        while self.tok.kind != "eof":
            t = self.tok.text
            self.i += 1
            if t in ("{", "(", "<"):
                depth += 1
            elif t in ("}", ")", ">"):
                depth -= 1
                if depth == 0 and t == "}":
                    self.accept(";")
                    return
            elif t == ";" and depth == 0:
                return

    def interface(self) -> A.Interface:
        start = self.expect("interface").start
        name = self.ident("an interface name")
        self.interfaces.add(name.text)
        mark = len(self.scoped_type_names)
        gparams, _ = self.generic_params()
        if gparams:  # `IModel<float[2]>` then parses; conformance is by the interface's name (interfaces.py)
            self.generic_structs.add(name.text)
        bases = self.bases()
        if "IDifferentiable" in bases:
            self.type_names.add("Differential")  # the conforming struct's, in its requirements
        self.expect("{")
        methods: list[A.Func] = []
        assoc: dict[str, list[str]] = {}
        while not self.accept("}"):
            mstart = self.tok.start
            head = self.member_head()
            if head is None:
                continue
            attrs, mods = head
            if self.accept("associatedtype"):
                aname = self.ident("a type name")
                assoc[aname.text] = self.bases()
                self.where_clauses(assoc)
                self.expect(";")
                self.type_names.add(aname.text)
                continue
            if self.at("__generic"):
                decl = self.generic_prefixed(attrs, mods, mstart, requirement=True)
                methods.extend(decl) if isinstance(decl, list) else methods.append(decl)  # type: ignore[arg-type]
                continue
            if (declared := self.member(mods, mstart, requirement=True)) is not None:
                methods.extend(declared)
                continue
            if self.at(INIT):
                # a constructor requirement: the conforming struct's own __init is what calls
                # through a (specialized) generic reach
                self.skip_requirement()
                continue
            if self.tok.kind == "ident" and not self.is_type_name(self.tok.text):
                raise FrontendError(UNSUPPORTED, f"'{self.tok.text}' in an interface is not supported",
                                    self.tok.start, self.tok.end)
            t = self.array_dims(self.type_ref())
            self.refuse_member_operator()
            mname = self.ident("a method name")
            if not (self.at("(") or self.at("<")):
                self.error("expected a method (interfaces hold methods and associated types)")
            methods.append(self.function(attrs, mods, t, mname, mstart))
        self.accept(";")
        self.end_generic(mark)
        return A.Interface(name.text, bases, methods, assoc, gparams, span=self.span_from(start))

    def extension(self) -> A.Extension:
        start = self.expect("extension").start
        mark = len(self.scoped_type_names)
        self.generic_bases = []
        gparams, type_params = self.generic_params()
        # `Model : IModel<I, O>`: the interface instances its parameters name (apart from its own bases')
        param_bases, self.generic_bases = self.generic_bases, []
        target = self.type_ref()
        bases = self.bases()
        generic_bases = self.generic_bases
        self.where_clauses(type_params)
        body = self.struct_body_after_brace(target.name)
        for f in body.fields:
            if "static" in f.mods or "extern" in f.mods and f.init is None:
                continue  # (an `extern` field names one the struct has: extensions.py)
            raise FrontendError(UNSUPPORTED, "an extension cannot add fields (only methods, typealiases and "
                                "conformances)", f.span[0], f.span[1])
        self.end_generic(mark)
        return A.Extension(target, bases, body.methods, body.aliases, gparams, type_params, body.fields,
                           param_bases, generic_bases, span=self.span_from(start))

    def struct_body_after_brace(self, name: str) -> A.Struct:
        """An extension's `{ ... }`: parsed as a struct body (fields are refused by the checker)."""
        save = self.toks[self.i - 1]
        self.toks.insert(self.i, Token("ident", "struct", save.end, save.end))
        self.toks.insert(self.i + 1, Token("ident", name, save.end, save.end))
        return self.struct()

    # ---- types ----
    def type_ref(self) -> A.TypeRef:
        while self.tok.kind == "ident" and self.tok.text in MATRIX_LAYOUTS:
            self.i += 1
        t = self.tok
        if t.kind != "ident":
            self.error("expected a type")
        if t.text in UNSUPPORTED_TYPES:
            raise FrontendError(UNSUPPORTED, f"type '{t.text}' is not supported", t.start, t.end)
        if not self.is_type_name(t.text):
            raise FrontendError(UNDEFINED, f"unknown type '{t.text}'", t.start, t.end)
        self.i += 1
        args: list = []
        if self.at("<") and (t.text in GENERIC_TYPES or t.text in self.generic_structs):
            args = self.generic_args()
        name = t.text
        while (self.at(".") or self.at("::")) and self.is_member_type(self.peek()):
            self.i += 2
            name += "." + self.toks[self.i - 1].text
        pointer = 0
        while self.at("*") and (self.peek().kind == "ident" or self.peek().text in (")", ",", ">", "*", ">>")):
            self.i += 1
            pointer += 1
        return A.TypeRef(name, args, pointer=pointer, span=self.span_from(t.start))

    def generic_args(self) -> list:
        """`<4, T, N>`: ints, types, and names of generic int parameters (kept as str)."""
        self.expect("<")
        args: list = []
        while True:
            if self.at("(") or (self.tok.kind == "int" or self.tok.kind == "ident" and not self.is_type_name(self.tok.text)) \
                    and self.peek().text in ("+", "-", "*", "/", "%"):  # `f<C * C>()`: an int expression
                args.append(self.binary(BINARY_PREC.index(["+", "-"])))
            elif self.tok.kind == "int":
                args.append(self.tok.value)
                self.i += 1
            elif (self.tok.text in ("Access", "AddressSpace") and self.peek().text in (".", "::")
                  and self.peek(2).kind == "ident"):  # `Ptr<T, Access::Read, AddressSpace::Device>`
                kind, case = self.tok, self.peek(2)
                self.i += 3
                args.append(A.TypeRef(f"{kind.text}.{case.text}", span=(kind.start, case.end)))
            elif self.tok.kind == "ident" and not self.is_type_name(self.tok.text) and self.peek().text != "<":
                args.append(self.tok.text)  # (a name with arguments is a generic type declared later)
                self.i += 1
            elif (self.tok.text in self.enum_names and self.peek().text in (".", "::")
                  and self.peek(2).kind == "ident"):  # `MyEnum.A`: a case, for an enum-typed parameter
                enum, case = self.tok, self.peek(2)
                self.i += 3
                args.append(A.TypeRef(f"{enum.text}.{case.text}", span=(enum.start, case.end)))
            else:
                args.append(self.array_dims(self.type_ref(), type_position=True))  # `DifferentialPair<float[3]>`
            if not self.accept(","):
                break
        self.expect(">")
        return args

    def array_dims(self, t: A.TypeRef, type_position: bool = False, unsized_ok: bool = False) -> A.TypeRef:
        """`[N]...` after a type (`type_position`: `D[2][1]` is an array of 1 of D[2], as in Slang) or
        after a declared name (`D x[1][2]`: x is an array of 1 of D[2], as in C). `unsized_ok`: a
        declared name's outermost size may be left out (`[]`), for an initializer to give it."""
        dims = []
        while self.at("["):
            self.i += 1
            n = self.tok
            if n.text == "]" and unsized_ok and not dims:
                self.i += 1
                dims.append(None)  # `C[] = {...}`: the initializer's length (sized_by_init)
                continue
            if self.peek().text != "]" and n.kind in ("ident", "int", "punct") and n.text != "]":
                dims.append(self.expr())  # `D - 1`: evaluated once generic parameters are substituted
                self.expect("]")
                continue
            if n.kind == "ident" and not self.is_type_name(n.text):
                dims.append(n.text)  # a generic int parameter, substituted when instantiated
            elif n.kind == "int":
                dims.append(n.value)
            else:
                self.error("expected a constant array size")
            self.i += 1
            self.expect("]")
        if not dims:
            return t
        dims = dims[::-1] + t.dims if type_position else dims + t.dims  # outermost first
        return A.TypeRef(t.name, t.args, dims, t.pointer, span=self.span_from(t.span[0]))

    def shared_local(self, start: int) -> A.Stmt:
        """`static groupshared float tile[64];` in a function: work-group memory, which lives as
        long as the work-group does, so it is the global of that name (a second one is E0005)."""
        mods = set()
        while self.tok.text in ("static", "groupshared"):
            mods.add(self.ident().text)
        t = self.array_dims(self.type_ref(), type_position=True)
        name = self.ident("a variable name")
        t = self.array_dims(t)
        if self.at("="):
            self.error("groupshared memory cannot have an initializer")
        self.expect(";")
        self.hoisted.append(A.Global(mods, t, name.text, None, span=self.span_from(start)))
        return A.Block([], span=self.span_from(start))

    def sized_by_init(self, t: A.TypeRef, init: A.Expr | None) -> A.TypeRef:
        """`float C[] = {1, 2, 3}`: the left-out outermost size is the initializer list's length."""
        if not t.dims or t.dims[0] is not None:
            return t
        if not isinstance(init, A.InitList):
            raise FrontendError(SYNTAX, "an array declared with '[]' needs an initializer list to give its size",
                                t.span[0], t.span[1])
        return A.TypeRef(t.name, t.args, [len(init.items), *t.dims[1:]], t.pointer, span=t.span)

    # ---- statements ----
    def block(self) -> A.Block:
        start = self.expect("{").start
        stmts = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                self.error("expected '}'")
            stmts.append(self.stmt())
        return A.Block(stmts, span=self.span_from(start))

    def starts_decl(self) -> bool:
        t = self.tok
        if t.kind != "ident":
            return False
        if t.text in ("let", "var", "const", "static", "constexpr"):
            return True
        nxt = self.peek()
        if not self.is_type_name(t.text):  # `Foo x`: a declaration with an unknown type
            return nxt.kind == "ident" and t.text not in KEYWORDS and nxt.text not in KEYWORDS

        if nxt.text in (".", "::"):  # `T.Differential x`, `S::A x`
            k = 1
            while self.peek(k).text in (".", "::") and (self.peek(k + 1).text == "Differential"
                                                or self.peek(k + 1).text in self.type_names):
                k += 2
            return k > 1 and self.peek(k).kind == "ident"
        if nxt.text == "[":  # `float[3] w`: sizes, then a name
            k = 1
            while self.peek(k).text == "[" and self.peek(k + 2).text == "]":
                k += 3
            return k > 1 and self.peek(k).kind == "ident"
        if nxt.text == "*":  # `float* p`
            k = 1
            while self.peek(k).text == "*":
                k += 1
            return self.peek(k).kind == "ident"
        if nxt.text == "<" and (t.text in GENERIC_TYPES or t.text in self.generic_structs):
            return not self.member_of_generic_instance()
        return nxt.kind == "ident"

    def member_of_generic_instance(self) -> bool:
        """`Vec<S, N>::fill(x)`, `Vec<S, N>.zero`: an expression through an instance of a generic
        type (a static method or constant), not the declaration `Vec<S, N> v` (nothing consumed)."""
        save, toks = self.i, list(self.toks)  # parsing splits '>>' in place: undo it
        try:
            self.i += 1
            self.generic_args()
            return self.tok.text in ("::", ".") and self.peek().kind == "ident" and not self.is_member_type(self.peek())
        except FrontendError:
            return False
        finally:
            self.i, self.toks = save, toks

    def stmt(self) -> A.Stmt:
        return self.nested(self._stmt, statements=True)

    def _stmt(self) -> A.Stmt:
        start = self.tok.start
        attrs = self.attributes()
        for a in attrs:
            if a.name in DECLARATION_ATTRS:
                raise FrontendError(SYNTAX, f"[{a.name}] applies to a declaration, not to a statement",
                                    a.span[0], a.span[1])
        t = self.tok
        if t.kind == "punct" and t.text == "{":
            return self.block()
        if self.accept(";"):
            return A.Block([], span=self.span_from(start))
        if t.kind == "ident":
            kw = t.text
            if (parse := feature.statements().get(kw)) is not None:  # (`__target_switch`: target_switch.py)
                return parse(self, start)
            if kw == "if":
                self.i += 1
                self.expect("(")
                bound = self.accept("let") and self.ident("a name")  # `if (let x = opt)` (a feature's if_let)
                if bound:
                    self.expect("=")
                cond = self.expr()
                self.expect(")")
                then = self.stmt()
                orelse = self.stmt() if self.accept("else") else None
                if bound:
                    if_let = next(iter(feature.hooks("if_let")), None)
                    if if_let is None:
                        raise FrontendError(UNSUPPORTED, "'if (let ...)' is not supported", bound.start, bound.end)
                    return if_let(bound.text, (bound.start, bound.end), cond, then, orelse, self.span_from(start))
                return A.If(cond, then, orelse, span=self.span_from(start))
            if kw == "for":
                self.i += 1
                self.expect("(")
                init = None
                if not self.accept(";"):
                    init = self.decl_or_expr_stmt()
                cond = None if self.at(";") else self.expr()
                self.expect(";")
                step = None if self.at(")") else self.expr()
                self.expect(")")
                body = self.stmt()
                return A.For(init, cond, step, body, attrs, span=self.span_from(start))
            if kw == "while":
                self.i += 1
                self.expect("(")
                cond = self.expr()
                self.expect(")")
                body = self.stmt()
                return A.While(cond, body, attrs, span=self.span_from(start))
            if kw == "do":
                self.i += 1
                body = self.stmt()
                self.expect("while")
                self.expect("(")
                cond = self.expr()
                self.expect(")")
                self.expect(";")
                return A.While(cond, body, attrs, True, span=self.span_from(start))
            if kw in ("break", "continue"):
                self.i += 1
                self.expect(";")
                cls = A.Break if kw == "break" else A.Continue
                return cls(span=self.span_from(start))
            if kw == "return":
                self.i += 1
                value = None if self.at(";") else self.expr()
                self.expect(";")
                return A.Return(value, span=self.span_from(start))
            if kw == "switch":
                return self.switch(start)
        return self.decl_or_expr_stmt()

    def switch(self, start: int) -> A.Switch:
        self.i += 1
        self.expect("(")
        value = self.expr()
        self.expect(")")
        self.expect("{")
        cases: list[A.Case] = []
        while not self.accept("}"):
            cstart = self.tok.start
            values: list[A.Expr] | None = []
            while self.at("case") or self.at("default"):
                if self.accept("default"):
                    values = None
                else:
                    self.i += 1
                    e = self.expr()
                    if values is not None:
                        values.append(e)
                self.expect(":")
            if values == []:
                self.error("expected 'case' or 'default'")
            body = []
            while not (self.at("case") or self.at("default") or self.at("}")):
                body.append(self.stmt())
            cases.append(A.Case(values, body, span=self.span_from(cstart)))
        return A.Switch(value, cases, span=self.span_from(start))

    def decl_or_expr_stmt(self) -> A.Stmt:
        start = self.tok.start
        if self.at("groupshared") or self.at("static") and self.peek().text == "groupshared":
            return self.shared_local(start)
        if self.starts_decl():
            kind = "typed"
            is_const = bool(self.accept("constexpr"))
            self.accept("static")
            if self.at("const"):
                self.i += 1
                is_const = True
            if self.at("let") or self.at("var"):
                kind = self.tok.text
                self.i += 1
                is_const = is_const or kind == "let"
            decls = []
            shared: A.TypeRef | None = None  # `Vec<T, N> a, b;`: the type every name declares
            while True:
                dstart = self.tok.start
                ty = None
                if kind == "typed":
                    ty = copy.deepcopy(shared) if shared else self.array_dims(self.type_ref(), type_position=True)
                    shared = shared or copy.deepcopy(ty)
                name = self.ident("a variable name")
                if kind != "typed" and self.accept(":"):
                    ty = self.type_ref()
                if ty is not None:
                    ty = self.array_dims(ty, unsized_ok=True)
                init = self.expr() if self.accept("=") else None
                if ty is not None:
                    ty = self.sized_by_init(ty, init)
                if kind == "let" and init is None:
                    self.error("expected '=' (a 'let' needs a value)")
                if kind == "var" and ty is None and init is None:  # nothing to infer its type from
                    self.error("expected ':' or '=' (a 'var' needs a type or a value)")
                decls.append(A.VarDecl(kind, ty, name.text, init, is_const, span=self.span_from(dstart)))
                if kind != "typed" or not self.accept(","):
                    break
            self.expect(";")
            if len(decls) == 1:
                return decls[0]
            return A.DeclGroup(decls, span=self.span_from(start))
        e = self.expr()
        self.expect(";")
        return A.ExprStmt(e, span=self.span_from(start))

    # ---- expressions ----
    def expr(self) -> A.Expr:
        return self.assignment()

    def assignment(self) -> A.Expr:
        return self.nested(self._assignment)

    def _assignment(self) -> A.Expr:
        start = self.tok.start
        lhs = self.ternary()
        if self.tok.kind == "punct" and self.tok.text in ASSIGN_OPS:
            op = self.tok.text
            self.i += 1
            rhs = self.assignment()
            return A.Assign(op, lhs, rhs, span=self.span_from(start))
        return lhs

    def ternary(self) -> A.Expr:
        start = self.tok.start
        c = self.binary(0)
        if self.accept("?"):
            a = self.assignment()
            self.expect(":")
            b = self.assignment()
            return A.Ternary(c, a, b, span=self.span_from(start))
        return c

    def binary(self, level: int) -> A.Expr:
        if level == len(BINARY_PREC):
            return self.unary()
        start = self.tok.start
        lhs = self.binary(level + 1)
        while self.tok.kind == "punct" and self.tok.text in BINARY_PREC[level] or (
                level == TYPE_TEST_LEVEL and self.tok.kind == "ident" and self.tok.text in ("is", "as")):
            op = self.tok.text
            self.i += 1
            if op in ("is", "as"):  # `x is S`, `x as S` (optional.py)
                lhs = A.TypeTest(op, lhs, self.type_ref(), span=self.span_from(start))
                continue
            rhs = self.binary(level + 1)
            lhs = A.Binary(op, lhs, rhs, span=self.span_from(start))
        return lhs

    def unary(self) -> A.Expr:
        t = self.tok
        if t.kind == "punct" and t.text == "&":
            raise FrontendError(UNSUPPORTED, "taking an address ('&x', a pointer into a variable or group-shared "
                                "memory) is not supported", t.start, t.end)
        if t.kind == "punct" and (t.text in ("-", "+", "!", "~") or (
                t.text == "*" and (self.peek().kind == "ident" or self.peek().text == "("))):  # `*p`
            self.i += 1
            e = self.nested(self.unary)
            return A.Unary(t.text, e, span=self.span_from(t.start))
        if t.kind == "punct" and t.text in ("++", "--"):
            self.i += 1
            e = self.nested(self.unary)
            return A.IncDec(t.text, True, e, span=self.span_from(t.start))
        if t.kind == "ident" and t.text == "no_diff":
            self.i += 1
            e = self.nested(self.unary)
            if isinstance(e, A.Call):
                e.no_diff = True
                e.span = self.span_from(t.start)
                return e
            return A.Call(A.Name("detach", span=(t.start, t.end)), [e], span=self.span_from(t.start))
        if t.kind == "punct" and t.text == "(" and self.peek().kind == "ident" \
                and self.is_type_name(self.peek().text) and self._is_cast():
            self.i += 1
            ty = self.type_ref()
            self.expect(")")
            e = self.nested(self.unary)
            return A.Cast(ty, e, span=self.span_from(t.start))
        return self.postfix()

    def _is_cast(self) -> bool:
        save = self.i
        try:
            self.i += 1
            self.type_ref()
            return self.at(")")
        except FrontendError:
            return False
        finally:
            self.i = save

    def postfix(self) -> A.Expr:
        start = self.tok.start
        e = self.primary()
        while True:
            if self.accept("("):
                args = []
                if not self.at(")"):
                    args.append(self.assignment())
                    while self.accept(",") and not self.at(")"):  # Slang accepts a trailing comma
                        args.append(self.assignment())
                self.expect(")")
                e = A.Call(e, args, span=self.span_from(start))
            elif self.at("::") and isinstance(e, A.Name) and e.id in REFUSED_LIBRARY_NAMES:  # (library.py)
                raise FrontendError(UNSUPPORTED, REFUSED_LIBRARY_NAMES[e.id], *e.span)
            elif self.at(".") or self.at("->") or (self.at("::") and isinstance(e, A.TypeExpr)):
                arrow = self.tok.text == "->"
                self.i += 1
                name = self.ident("a member name")
                e = A.Member(e, name.text, (name.start, name.end), arrow, span=self.span_from(start))
            elif self.at("<") and isinstance(e, A.Name | A.Member) and not e.targs and self._generic_call_args(e):
                pass
            elif self.accept("["):
                idx = self.expr()
                more = []
                while self.accept(","):  # `obj[i, j]`: a subscript operator with two parameters
                    more.append(self.expr())
                self.expect("]")
                e = A.Index(e, idx, more, span=self.span_from(start))
            elif self.tok.kind == "punct" and self.tok.text in ("++", "--"):
                op = self.tok.text
                self.i += 1
                e = A.IncDec(op, False, e, span=self.span_from(start))
            else:
                return e

    def _generic_call_args(self, e: A.Name | A.Member) -> bool:
        """`f<4, N>(...)`, `bit_cast<uint>(x)`: explicit generic arguments when a call follows;
        otherwise `<` is a comparison and nothing is consumed."""
        save, toks = self.i, list(self.toks)  # parsing splits '>>' in place: undo it on failure
        try:
            args = self.generic_args()
        except FrontendError:
            self.i, self.toks = save, toks
            return False
        # `fwd_diff(f<float>)`: a generic function named with type arguments, not called here
        named = (self.at(")") or self.at(",")) and all(isinstance(a, A.TypeRef | int) for a in args) and any(
            isinstance(a, A.TypeRef) for a in args)  # `fwd_diff(f<float, 2>)` too
        if not (self.at("(") or named):
            self.i, self.toks = save, toks
            return False
        e.targs = args
        return True

    def primary(self) -> A.Expr:
        t = self.tok
        if t.kind in ("int", "float"):
            self.i += 1
            return A.Num(t.value, t.kind == "float", t.suffix, span=(t.start, t.end))  # type: ignore[arg-type]
        if t.kind == "string":
            self.i += 1
            return A.Str(t.value, span=(t.start, t.end))  # type: ignore[arg-type]
        if t.kind == "ident":
            if t.text in ("true", "false"):
                self.i += 1
                return A.BoolLit(t.text == "true", span=(t.start, t.end))
            # `matrix` / `vector` without `<...>` are ordinary names (Slang code names variables so)
            if self.is_type_name(t.text) and not (t.text in ("matrix", "vector") and self.peek().text != "<"):
                ty = self.type_ref()
                return A.TypeExpr(ty, span=ty.span)
            self.i += 1
            return A.Name(t.text, span=(t.start, t.end))
        if t.kind == "punct" and t.text == "(":
            if (parsed := feature.first("parse_primary", self)) is not None:  # (a lambda: lambdas.py)
                return parsed
            self.i += 1
            e = self.expr()
            self.expect(")")
            return e
        if t.kind == "punct" and t.text == "{":
            self.i += 1
            items = []
            while not self.at("}"):
                items.append(self.assignment())
                if not self.accept(","):
                    break
            self.expect("}")
            return A.InitList(items, span=self.span_from(t.start))
        self.error("expected an expression")
        raise AssertionError


def parse(text: str, filename: str) -> A.Program:
    return Parser(text, filename).parse_program()
