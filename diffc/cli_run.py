"""What `diffc run` needs beyond compiling: Slang test annotations and one kernel launch
(docs/test-input.md is the user's description of the format).

Annotations (one per line, anywhere in the file):

    //TEST_INPUT:ubuffer(data=[1 2 3 4], stride=4):out,name=gradBuffer
    //TEST_INPUT: set gradBuffer = out ubuffer(data=[0 0 0 0], stride=4)

`data` lists the initial elements (spaces or commas between them); `count=N` pads with zeros
(or sets the size of a buffer without data). `out` marks buffers printed after the run.
`stride` is 4 for buffers of scalars; a buffer of vectors (`RWStructuredBuffer<float3>`) reads
one element every `stride` bytes of `data` (stride=16: a float3 and one padding word), or
tightly packed where the stride is smaller than the vector, and prints all of `data` back.

Textures (runtime/input_textures.py): `//TEST_INPUT: Texture2D(size=N, content=one):name=t` or
`set t = Texture2D(size=N, content=zero)`, an N x N texture of ones or zeros; `Sampler` (any
name) is accepted and binds nothing (the one sampler modelled is frontend/textures.py's).

A buffer binds to the entry point's global buffer of that name, or to a pointer parameter of
that name (whose offset is then 0). Scalar parameters have no annotation here: they are a
located error (dispatch such entry points from Python: `m.entry.dispatch(...)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from diffc.runtime.waiting import finish
from diffc.diagnostics import DiffcError, SourceLocation, format_diagnostic, read_source
from diffc.runtime.input_textures import InputTexture, InputTextureGroup, input_texture
from diffc.runtime.textures import NAMED as TEXTURE_NAMED, ROLES as TEXTURE_ROLES

# (Slang's runner reads `ubuffer(...),name=X` as `ubuffer(...):name=X`)
_OLD = re.compile(r"^ubuffer\((?P<opts>[^)]*)\)\s*(?:[:,](?P<flags>.*))?$")
# (a generic type's name with its arguments too: `type_conformance Persp<float>:ISensor<float> = 0`)
_CONFORMANCE = re.compile(r"^type_conformance\s+(?P<struct>[^:=]+?)\s*:\s*(?P<iface>[^:=]+?)\s*=\s*(?P<id>\d+)\s*;?\s*$")
_NEW = re.compile(r"^set\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<out>out\s+)?ubuffer\((?P<opts>[^)]*)\)\s*;?\s*$")


@dataclass
class TestBuffer:
    name: str
    data: list[str]
    count: int | None
    out: bool
    where: SourceLocation
    line: str
    type_name: str = "float"
    stride: int = 4  # bytes from one element to the next in `data` (a multiple of 4)
    words: bool = False  # `data` as Slang's test runner reads it: each element one 32-bit word


    def format(self, v) -> str:
        if self.type_name in ("float", "double", "half"):
            return f"{float(v):f}"
        return str(int(v))


def _error(where: SourceLocation, line: str, message: str) -> DiffcError:
    source = "\n" * (where.line - 1) + line  # the annotation's line at its place
    return DiffcError(format_diagnostic(where, message, "test-input", source))


def _options(text: str, where, line) -> tuple[list[str], int | None, int]:
    data: list[str] = []
    count = None
    stride = 4
    rest = text
    m = re.search(r"data\s*=\s*\[([^\]]*)\]", rest)
    if m:
        data = [x for x in re.split(r"[\s,]+", m.group(1).strip()) if x]
        rest = rest[: m.start()] + rest[m.end():]
    for part in (p.strip() for p in rest.split(",")):
        if not part:
            continue
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key == "stride":
            if not (value.isdigit() and (int(value) in (1, 2) or int(value) > 0 and int(value) % 4 == 0)):
                raise _error(where, line, f"TEST_INPUT: stride must be 1, 2 or a positive multiple of 4 bytes (the "
                                          f"data are 32-bit words, packed 4 or 2 to a word with stride 1 or 2), "
                                          f"got stride={value}")
            stride = int(value)
        elif key == "count" and value.isdigit():
            count = int(value)
        else:
            raise _error(where, line, f"TEST_INPUT: unknown ubuffer option '{part}' (known: data=[...], stride=N, count=N)")
    return data, count, stride


def parse_test_inputs(text: str, filename: str, slang_words: bool = False) -> list[TestBuffer]:
    """Every `//TEST_INPUT` ubuffer of the file; a malformed one is a located error.
    `slang_words`: read `data` as Slang's test runner does (see _slang_words)."""
    buffers: list[TestBuffer] = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if not stripped.startswith("//TEST_INPUT"):
            continue
        col = len(line) - len(stripped) + 1
        where = SourceLocation(filename, n, col)
        body = stripped[len("//TEST_INPUT"):].lstrip(":").strip()
        texture = input_texture(body, where, line, _error)
        if texture is not None:
            if texture.name:  # (a Sampler's is nothing to bind)
                buffers.append(texture)
            continue
        if _CONFORMANCE.match(body):  # (conformance_ids reads these)
            continue
        m = _NEW.match(body)
        if m:
            data, count, stride = _options(m.group("opts"), where, line)
            buffers.append(TestBuffer(m.group("name"), data, count, bool(m.group("out")), where, line, stride=stride))
            continue
        m = _OLD.match(body)
        if m:
            data, count, stride = _options(m.group("opts"), where, line)
            # (`name X` reads as `name=X`, as Slang's runner reads it)
            flags = [re.sub(r"^name\s+(?=\w)", "name=", f.strip()) for f in (m.group("flags") or "").split(",") if f.strip()]
            name = next((f.split("=", 1)[1].strip() for f in flags if f.startswith("name=")), None)
            if not name:
                raise _error(where, line, "TEST_INPUT: the ubuffer has no name=NAME to bind it to a buffer")
            unknown = [f for f in flags if f != "out" and not f.startswith("name=")]
            if unknown:
                raise _error(where, line, f"TEST_INPUT: unknown flag '{unknown[0]}' (known: out, name=NAME)")
            buffers.append(TestBuffer(name, data, count, "out" in flags, where, line, stride=stride))
            continue
        raise _error(
            where, line,
            "TEST_INPUT: cannot read this annotation; expected 'ubuffer(data=[...], stride=4):out,name=NAME' "
            "or 'set NAME = out ubuffer(data=[...], stride=4)'",
        )
    seen: dict[str, TestBuffer] = {}
    for b in buffers:
        if isinstance(b, TestBuffer):
            b.words = slang_words
        if b.name in seen:
            raise _error(b.where, b.line, f"TEST_INPUT: buffer '{b.name}' is declared twice")
        seen[b.name] = b
    return buffers


def conformance_ids(text: str, filename: str) -> dict[str, dict[str, int]]:
    """`//TEST_INPUT: type_conformance A:IFoo = 0` lines: interface -> {struct: id}, the tag a
    dynamic IFoo value has when it holds an A (the front end's `conformance_ids`). One struct
    given two ids, or one id given twice, is a located error."""
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        m = _CONFORMANCE.match(stripped[len("//TEST_INPUT"):].lstrip(":").strip()) \
            if stripped.startswith("//TEST_INPUT") else None
        if not m:
            continue
        where = SourceLocation(filename, n, len(line) - len(stripped) + 1)
        struct, iface, k = "".join(m.group("struct").split()), "".join(m.group("iface").split()), int(m.group("id"))
        ids = out.setdefault(iface, {})
        if ids.get(struct, k) != k:
            raise _error(where, line, f"TEST_INPUT: '{struct}' already has conformance id {ids[struct]} for '{iface}'")
        other = next((t for t, v in ids.items() if v == k and t != struct), None)
        if other is not None:
            raise _error(where, line, f"TEST_INPUT: conformance id {k} of '{iface}' is already given to '{other}'")
        ids[struct] = k
    return out


def merge_conformance_options(ids: dict[str, dict[str, int]], options: list[str]) -> dict[str, dict[str, int]]:
    """`--conformance A:IFoo=0` options over the file's own ids (an option wins)."""
    for opt in options:
        m = _CONFORMANCE.match(f"type_conformance {opt}")
        if not m:
            raise DiffcError(f"error: --conformance {opt}: expected STRUCT:INTERFACE=ID, as in --conformance A:IFoo=0")
        iface = "".join(m.group("iface").split())
        ids.setdefault(iface, {})["".join(m.group("struct").split())] = int(m.group("id"))
    return ids


_INT_DTYPES = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


_SCALAR_NAMES = {"f16": "half", "bf16": "bfloat16"}


def _dtype(element, required: bool = True) -> tuple[np.dtype, str] | None:
    """numpy's dtype and the type name diffc run prints for a buffer's elements; None (or, where
    `required`, an error) for a kind it does not read."""
    from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType

    if isinstance(element, Float32Type):
        return np.dtype(np.float32), "float"
    if isinstance(element, Float16Type):
        return np.dtype(np.float16), "half"
    if isinstance(element, Float64Type):
        return np.dtype(np.float64), "double"
    if isinstance(element, IntegerType) and element.width.data in _INT_DTYPES:
        # the IR's integers are signless: elements print signed (a uint 0xFFFFFFFF as -1)
        return np.dtype(_INT_DTYPES[element.width.data]), "int"
    if not required:
        return None
    raise DiffcError(f"error: buffers of element type {element} are not supported by diffc run")


@dataclass
class _VectorLayout:
    """A buffer of vectors: `data` holds one element every `words` 32-bit words (the TEST_INPUT's
    stride, or the vector's own size when the stride is smaller, as in a float4 buffer declared
    with stride=4); on the device each element takes `device_lanes` scalars (OpenCL's float3 is
    as large as a float4). Padding words keep their data."""

    scalar: object
    lanes: int
    words: int
    device_lanes: int

    @staticmethod
    def of(element, stride: int) -> _VectorLayout | None:
        from xdsl.dialects.builtin import VectorType

        if not isinstance(element, VectorType):
            return None
        n = element.get_shape()[0]
        return _VectorLayout(element.element_type, n, max(stride // 4, n), 4 if n == 3 else n)

    def to_device(self, words: np.ndarray) -> np.ndarray:
        count = -(-len(words) // self.words)
        padded = np.zeros(count * self.words, words.dtype)
        padded[: len(words)] = words
        out = np.zeros((count, self.device_lanes), words.dtype)
        out[:, : self.lanes] = padded.reshape(count, self.words)[:, : self.lanes]
        return out

    def from_device(self, dev: np.ndarray, words: np.ndarray) -> None:
        for k in range(dev.shape[0]):
            at = k * self.words
            n = min(self.lanes, len(words) - at)
            words[at: at + n] = dev[k, :n]


_HALF_WORD = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[hH]")
_INT_WORD = re.compile(r"[-+]?(?:0[xX](?P<hex>[0-9a-fA-F]+)|\d+)")


def _slang_words(b: TestBuffer) -> np.ndarray:
    """`data` as Slang's test runner stores it, whatever the buffer's element type: each element
    one 32-bit word, an integer literal its two's-complement bits, any other number the bits of
    that float32. So `data=[2]` in a float buffer is the float whose bits are the int 2."""
    words = np.zeros(len(b.data), np.uint32)
    for k, x in enumerate(b.data):
        try:
            m = _INT_WORD.fullmatch(x)
            if _HALF_WORD.fullmatch(x):  # `1.5h`: the half's bits in the word's low 16 bits
                words[k] = int(np.array([float(x[:-1])], np.float16).view(np.uint16)[0])
            elif m:
                v = int(x, 16 if m.group("hex") else 10)
                if not -2**31 <= v < 2**32:
                    raise ValueError(f"{x} does not fit in 32 bits")
                words[k] = v & 0xFFFFFFFF
            else:
                words[k] = np.array([float(x)], np.float32).view(np.uint32)[0]
        except ValueError as e:
            raise _error(b.where, b.line, f"TEST_INPUT: bad element in data for '{b.name}' ({e})") from None
    return words


def _slang_bytes(b: TestBuffer, max_bytes: int | None = None) -> np.ndarray:
    """The bytes of a (RW)ByteAddressBuffer as Slang's test runner fills it: `data` as 32-bit
    words (_slang_words: `1.5` a float's bits, `7` an int's, `1.5h` a half's), with stride 1 or 2
    each value's low 1 or 2 bytes packed one after another; `count` elements of `stride` bytes
    make it larger. Padded to whole words."""
    words = _slang_words(b)
    if b.stride in (1, 2):
        values = words.astype(np.uint16 if b.stride == 2 else np.uint8)  # (the low bytes)
        raw = values.tobytes()
    else:
        raw = words.tobytes()
    n = max(len(raw), (b.count or 0) * b.stride, 4)
    n += -n % 4
    if max_bytes is not None and n > max_bytes:
        raise _error(b.where, b.line, f"TEST_INPUT: '{b.name}' has {n} bytes; the device allocates at most "
                                      f"{max_bytes} bytes per buffer")
    out = np.zeros(n, np.uint8)
    out[: len(raw)] = np.frombuffer(raw, np.uint8)
    return out


def _array(b: TestBuffer, dtype: np.dtype, max_bytes: int | None = None) -> np.ndarray:
    """The buffer's initial contents; `max_bytes`: the most one device buffer may hold. With
    `b.words` the elements are the bytes of Slang's words (_slang_words), else each element of
    `data` is read as a number of the element type."""
    if b.words:
        raw = _slang_bytes(b).tobytes() if b.stride in (1, 2) else _slang_words(b).tobytes()
        values = np.frombuffer(raw + bytes(-len(raw) % dtype.itemsize), dtype)
    else:
        try:
            if dtype.kind == "f":
                values = [float(x[:-1] if _HALF_WORD.fullmatch(x) else x) for x in b.data]  # (`1.5h` too)
            else:
                values = [int(x, 0) if not re.fullmatch(r"-?\d+\.0*", x) else int(float(x)) for x in b.data]
        except ValueError as e:
            raise _error(b.where, b.line, f"TEST_INPUT: bad element in data for '{b.name}' ({e})") from None
    n = max(len(values), b.count or 0, 1)
    if max_bytes is not None and n * dtype.itemsize > max_bytes:
        raise _error(b.where, b.line, f"TEST_INPUT: '{b.name}' has {n} elements ({n * dtype.itemsize} bytes); "
                                      f"the device allocates at most {max_bytes} bytes per buffer")
    if dtype.kind in "iu" and not b.words:
        info = np.iinfo(dtype)
        bad = next((v for v in values if not info.min <= v <= info.max), None)
        if bad is not None:
            raise _error(b.where, b.line, f"TEST_INPUT: element {bad} of '{b.name}' does not fit in its "
                                          f"{dtype.name} elements")
    arr = np.zeros(n, dtype)
    arr[: len(values)] = values
    return arr


def _flush_c_stdout() -> None:
    """OpenCL printf writes through the C library's stdout: flush it where the runtime did not."""
    import ctypes

    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def texture_arg(param, by_name, textures, sizes, dev, filename: str, entry: str, kernel_textures: list[str],
                where=None, source: str | None = None):
    """The kernel argument of one texture parameter, from the texture's //TEST_INPUT. `where()`:
    the texture's declaration (an error names it; found only then)."""
    import pyopencl as cl

    got = textures.get(param.of)
    if got is None:
        b = by_name.get(param.of)
        group = next((g for g in by_name.values() if isinstance(g, InputTextureGroup) and param.of.startswith(g.name + "_")),
                     None)
        if b is None and group is not None:
            b = group.member(param.of, list(dict.fromkeys(kernel_textures)), _error)
        if not isinstance(b, InputTexture):
            raise _located(where() if where else None,
                           f"texture '{param.of}' is used by '{entry}' but no //TEST_INPUT declares it "
                           f"(add e.g. //TEST_INPUT: set {param.of} = Texture2D(size=4, content=one))", "run-input",
                           source, filename)
        arr = b.texels(param.lanes, _dtype(param.type.element_type)[0] if param.kind == "texels" else np.float32)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        dims = np.array([b.size, b.size], np.int32)
        got = textures[param.of] = (cl.Buffer(dev.context, flags, hostbuf=arr), cl.Buffer(dev.context, flags, hostbuf=dims),
                                    arr.size, b.size)
    texels, dims, count, size = got
    if param.kind in ("width", "height"):
        return np.int32(size)
    sizes[param.name] = count if param.kind == "texels" else 2
    return texels if param.kind == "texels" else dims


def _parameter_location(fn, param: str, source: str | None, filename: str) -> SourceLocation | None:
    """Where the entry point declares `param` (a flattened leaf `a_b_c` is found as `a_b_c`,
    `a_b` or `a`), else where the entry point is; None when neither can be found."""
    from xdsl.dialects.builtin import FileLineColLoc

    from diffc.diagnostics import line_col

    loc = fn.location
    start = 0
    if source is not None and isinstance(loc, FileLineColLoc):
        start = sum(len(ln) + 1 for ln in source.splitlines()[: loc.line.data - 1])
    if source is None:
        return SourceLocation(filename, loc.line.data, loc.column.data) if isinstance(loc, FileLineColLoc) else None
    name = fn.sym_name.data
    parts = param.split("_")
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", source[start:]):
        open_at = start + m.end()
        close_at = source.find(")", open_at)
        params = source[open_at: close_at if close_at >= 0 else len(source)]
        for k in range(len(parts), 0, -1):
            hit = re.search(rf"%?\b{re.escape('_'.join(parts[:k]))}\b", params)
            if hit:
                return SourceLocation(filename, *line_col(source, open_at + hit.start()))
        return SourceLocation(filename, *line_col(source, start + m.start()))
    return None


def _buffer_location(front, fn, name: str, source: str | None, filename: str) -> SourceLocation | None:
    """Where buffer `name` is declared: a global's declaration (the front end's module keeps its
    place), else the entry point's parameter."""
    from xdsl.dialects import memref
    from xdsl.dialects.builtin import FileLineColLoc

    for op in front.ops if front is not None else ():
        if isinstance(op, memref.GlobalOp) and op.sym_name.data == name and isinstance(op.location, FileLineColLoc):
            loc = op.location
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
    return _parameter_location(fn, name, source, filename)


def byte_address_buffers(front) -> frozenset:
    """The global buffers of the front end's module `front` that are (RW)ByteAddressBuffers
    (lowering marks their globals)."""
    from xdsl.dialects import memref

    from diffc.frontend.features.byte_address_buffers import BYTE_ADDRESS

    return frozenset(op.sym_name.data for op in (front.ops if front is not None else ())
                     if isinstance(op, memref.GlobalOp) and BYTE_ADDRESS in op.attributes)


def _byte_address(lowered, name: str) -> bool:
    """Whether global buffer `name` is a (RW)ByteAddressBuffer: from a cached run's plan (no
    compile), else from the front end's module."""
    plan = getattr(lowered, "plan", None)
    if plan is not None:
        return name in plan.byte_address
    return name in byte_address_buffers(lowered.front)


def _located(where: SourceLocation | None, message: str, code: str, source: str | None, filename: str) -> DiffcError:
    """`message` at `where` (its line shown where it is in the file run), else naming the file."""
    if where is None:
        return DiffcError(f"error[{code}]: {filename}: {message}")
    text = source if where.file == filename else None
    if text is None:
        try:
            text = read_source(where.file)
        except (OSError, DiffcError):
            text = None
    return DiffcError(format_diagnostic(where, message, code, text))


def _numthreads_location(source: str | None, filename: str) -> SourceLocation | None:
    """Where the file writes `[numthreads(...)]` (the first one), if it does."""
    from diffc.diagnostics import line_col

    m = re.search(r"numthreads\s*\(", source or "")
    return SourceLocation(filename, *line_col(source, m.start())) if m and source else None


def run_kernel(lowered, groups, buffers: list[TestBuffer], filename: str):
    """Builds the lowered module (a cli.Lowered) as a dispatch builds it, binds buffers, runs the
    entry point's kernel over [threads x groups] work-items; returns [(TestBuffer, values)] for
    the `out` buffers, in declaration order. The file's text lets errors about parameters point
    at them. A run from the module cache (cli.CachedRun) has its KernelProgram (`plan`) and
    no IR: `lowered.module` and `.front` are made only where an error must point into them;
    a compiled one hands its KernelProgram to `lowered.keep` for the cache."""
    import sys

    import pyopencl as cl
    from xdsl.dialects import func
    from xdsl.dialects.builtin import MemRefType, VectorType

    from diffc.kernel_program import (bounds_sites, entry_kernel_params, entry_proofs, keep_launched_form,
                                      status_slots, uninit_sites)
    from diffc.runtime.bounds import BoundsBuffer, proven
    from diffc.runtime.device import device
    from diffc.runtime.program import build_program, check_work_group_bytes, keep_binary, work_group_memory
    from diffc.runtime.status import StatusBuffers

    entry, threads, source = lowered.entry, lowered.numthreads, lowered.text
    plan = getattr(lowered, "plan", None)
    kept = plan.program.kernels[entry] if plan is not None else None

    def fn():  # the entry point's function, for an error's location
        return next(f for f in lowered.module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == entry)

    by_name = {b.name: b for b in buffers}
    args: list = []
    arrays: list[tuple[TestBuffer, np.ndarray, object]] = []
    dev = device()
    kparams = kept.params if kept is not None else entry_kernel_params(lowered.module, lowered.front, entry)
    names = [p.name for p in kparams]
    slots = {s.name: s for s in (kept.status if kept is not None else status_slots(lowered.module))}
    mine = [slots[p.of] for p in kparams if p.kind == "status" and p.of in slots]
    status = StatusBuffers(mine) if mine else None
    sizes: dict[str, int] = {}
    bounds = None
    uninit = None  # the sanitizer's uninit-check: nothing is tracked (every buffer starts written)
    if any(p.kind == "status" and p.of == "uninit" for p in kparams):
        from diffc.runtime.uninit import UninitStatus

        uninit = UninitStatus(kept.uninit_sites if kept is not None else uninit_sites(lowered.module))
    textures = {}  # texture name -> (its texels' array, its buffers)
    for param in kparams:
        t, name = param.type, param.name
        if param.kind in TEXTURE_ROLES:
            args.append(texture_arg(param, by_name, textures, sizes, dev, filename, entry,
                                    [q.of for q in kparams if q.kind in TEXTURE_NAMED],
                                    lambda: _buffer_location(lowered.front, fn(), param.of, source, filename), source))
            continue
        if param.kind == "status" and param.of in slots:  # a status buffer (runtime/status.py), checked below
            args.append(status.buffers[mine.index(slots[param.of])])
            continue
        if param.kind == "status" and param.of == "bounds":  # bounds-check's status buffer, checked below
            bounds = BoundsBuffer(kept.bounds_sites if kept is not None else bounds_sites(lowered.module))
            args.append(bounds.buffer)
            continue
        if param.kind == "status" and param.of == "uninit":  # uninit-check's status: untracked, nothing to read
            args.append(uninit.buffer)
            continue
        if param.kind == "shadow":  # a buffer's written flags: untracked here, a one-int dummy
            args.append(uninit.dummy)
            continue
        if param.kind == "track":
            args.append(np.int32(0))
            continue
        if param.kind == "length":  # a buffer's length (the buffer comes before it)
            args.append(np.int64(sizes[param.of]))
            continue
        if param.kind == "offset":
            args.append(np.int64(0))  # the offset of a pointer bound to a whole buffer
            continue
        if not isinstance(t, MemRefType):
            where = _parameter_location(fn(), name, source, filename)
            message = (f"entry point '{entry}' has a parameter '{name}' of type {t}, which //TEST_INPUT cannot "
                       f"supply (diffc run binds buffers only); run it from Python with m.{entry}.dispatch(...)")
            if where is None:
                raise DiffcError(f"error[run-parameter]: {filename}: {message}")
            raise DiffcError(format_diagnostic(where, message, "run-parameter", source))
        b = by_name.get(name)
        if b is None:
            raise _located(_buffer_location(lowered.front, fn(), name, source, filename),
                           f"buffer '{name}' is used by '{entry}' but no //TEST_INPUT declares it (add e.g. "
                           f"//TEST_INPUT: set {name} = out ubuffer(data=[0 0 0 0], stride=4))", "run-input",
                           source, filename)
        if _byte_address(lowered, name):  # bytes as Slang's runner lays them out, printed as words
            arr = _slang_bytes(b, int(dev.cl_device.max_mem_alloc_size))
            b.type_name = "uint"
            mem = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
            args.append(mem)
            sizes[name] = arr.size
            arrays.append((b, arr, mem, arr, None))
            continue
        scalar = t.element_type.element_type if isinstance(t.element_type, VectorType) else t.element_type
        if _dtype(scalar, required=False) is None:
            raise _located(_buffer_location(lowered.front, fn(), name, source, filename),
                           f"buffer '{name}' holds {_SCALAR_NAMES.get(str(scalar), str(scalar))} values, which "
                           "diffc run does not read or print (it reads float, double and integer buffers; "
                           "dispatch this kernel from Python with Tensors)", "run-input", source, filename)
        layout = _VectorLayout.of(t.element_type, b.stride)
        size = _dtype(t.element_type)[0].itemsize if layout is None else 4
        if layout is None and b.stride not in (4, size):
            raise _error(b.where, b.line, f"TEST_INPUT: stride={b.stride} does not fit '{name}', a buffer of "
                                          f"{8 * size}-bit scalars (stride={size}, or 4)")
        if layout and _dtype(layout.scalar)[0].itemsize != 4:
            raise _error(b.where, b.line, f"TEST_INPUT: '{name}' holds vectors of {t.element_type.element_type}: "
                                          "diffc run reads buffers of vectors of 32-bit elements only")
        dtype, b.type_name = _dtype(layout.scalar if layout else t.element_type)
        arr = _array(b, dtype, int(dev.cl_device.max_mem_alloc_size))
        dev_arr = layout.to_device(arr) if layout else arr
        mem = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=dev_arr)
        args.append(mem)
        sizes[name] = dev_arr.size
        arrays.append((b, arr, mem, dev_arr, layout))
    local = tuple(threads)
    global_size = tuple(t * g for t, g in zip(threads, groups))
    if plan is not None:
        check_work_group_bytes(plan.work_group_bytes)
        prog = plan.program
    else:
        used = work_group_memory(lowered.module)
        check_work_group_bytes(used)
        # the program holds only the form of the kernel that this launch runs (kernel_program.py)
        inbounds = proven(entry_proofs(lowered.module, entry), lambda n: args[names.index(n)], global_size)
        keep_launched_form(lowered.module, entry, inbounds)
        from diffc.compiler import kernel_program  # (not imported by a run from the cache)

        prog = kernel_program(lowered.module, lowered.settings, lowered.front, entry)
        if lowered.keep is not None:
            lowered.keep(prog, used)
    program = build_program(prog.source, prog.build_options)
    info = prog.kernels[entry]
    # bounds-check's variant without the checks it proves for this launch (runtime/bounds.py)
    use_variant = proven(info.proofs, lambda n: args[names.index(n)], global_size)
    kern = cl.Kernel(program, info.inbounds if use_variant else info.c_name)
    if args:
        kern.set_args(*args)
    if int(np.prod(local)) > dev.max_work_group_size:
        message = (f"[numthreads{local}] is {int(np.prod(local))} work-items per group; the device "
                   f"'{dev.name}' runs at most {dev.max_work_group_size}")
        where = _numthreads_location(source, filename)
        raise DiffcError(format_diagnostic(where, message, "run-launch", source) if where else f"error: {filename}: {message}")
    sys.stdout.flush()
    try:
        if status is not None:
            status.reset()
        if bounds is not None:
            bounds.reset()
        cl.enqueue_nd_range_kernel(dev.queue, kern, global_size, local)
        finish(dev.queue)
        if plan is not None:  # an unchanged file run again: its program is worth a binary (program.py)
            keep_binary(prog.source, prog.build_options)
    except cl.Error as e:
        raise DiffcError(f"error: {filename}: the device could not run '{entry}' over {global_size} work-items "
                         f"in groups of {local}: {e}") from None
    _flush_c_stdout()
    sources = {filename: source} if source is not None else None
    if bounds is not None:
        bounds.check(entry, f"running '{entry}'", sources)
    if status is not None:
        status.check(f"running '{entry}'", sources, entry)
    used = {b.name for b, *_ in arrays} | set(textures)
    for b in buffers:
        if b.name not in used:
            # declared but unused by this entry point: printed with its initial data
            b.type_name = "float"
    out = []
    for b in buffers:
        if not b.out or isinstance(b, InputTexture | InputTextureGroup):
            continue
        hit = next((rest for bb, *rest in arrays if bb is b), None)
        if hit is None:
            out.append((b, _array(b, np.dtype(np.float32), int(dev.cl_device.max_mem_alloc_size))))
            continue
        arr, mem, dev_arr, layout = hit
        cl.enqueue_copy(dev.queue, dev_arr, mem)
        finish(dev.queue)
        if layout:
            layout.from_device(dev_arr, arr)
        out.append((b, arr.view(np.uint32) if b.type_name == "uint" else arr))
    finish(dev.queue)
    return out
