"""Adversarial input for every user entry: mutated Slang for `diffc compile` / `diffc run`,
mutated IR and pipelines for `diffc-opt`, mutated files for `diffc.load_module`.

The rule under test: an input either works, or it gets a located diagnostic
(`file:line:col: error...`), exit status 1, no Python traceback, and no half-written `-o` file.
Mutations start from the real inputs (examples/ and tests/filecheck/) and delete, duplicate,
swap or insert tokens, truncate, and splice in huge numbers, unicode, keywords and binary bytes.
Bounded: a fixed number of examples per entry, no deadline (the machine is small and shared).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffc.cli
from diffc.pipeline import AD_PIPELINE_SPEC
from diffc.diagnostics import DiffcError
from diffc.tools import diffc_opt

ROOT = Path(__file__).resolve().parents[1]
# tests/fuzz_seeds/: small programs of features the others do not reach (groupshared, Optional,
# declared Differential types, a flat 2,000-term expression, custom derivatives of functions,
# methods and pointer types), so that mutations start from them too
SLANG = sorted([*ROOT.glob("examples/*.slang"), ROOT / "examples/mlp/mlp.slang",
                *ROOT.glob("tests/filecheck/frontend/*.slang"), *ROOT.glob("tests/fuzz_seeds/*.slang")])
MLIR = sorted(p for p in ROOT.glob("tests/filecheck/*/*.mlir") if "RUN: diffc-opt" in p.read_text()
              or "RUN: not diffc-opt" in p.read_text())

# A diagnostic names file:line:col, or (for whole-input problems such as an unknown pass) starts
# with `error`; a command-line usage error is argparse's `PROG: error: ...` after the usage.
LOCATED = re.compile(r"^(\S+:\d+:\d+: error|error)", re.MULTILINE)
# what the IR verifier's messages say (`'func.func' @f: custom derivative @g (diff.fwd_derivative) has
# signature (!diff.pair<f32>) -> f32, ...`), which a Slang program's diagnostics never should
IR_MESSAGE = re.compile(r"'func\.func' @|\(diff\.(fwd|bwd)_derivative\)|!diff\.pair<|memref<\?")
USAGE = re.compile(r"^usage: .*^\S+: error: ", re.MULTILINE | re.DOTALL)

TOKEN = re.compile(r"\s+|[A-Za-z_]\w*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[fF]?|\"(?:[^\"\\\n]|\\.)*\"|.", re.DOTALL)
SPLICES = [
    "{", "}", "(", ")", "[", "]", "<", ">", ";", ",", ".", ":", "::", "=", "+", "-", "*", "/", "%", "?",
    "&", "|", "!", "^", "~", "#", "@", "$", "\\", "'", '"', "->", "=>", "...", "//", "/*", "*/",
    "if", "else", "for", "while", "do", "return", "break", "continue", "struct", "void", "float", "int",
    "uint", "bool", "half", "double", "float3", "var", "let", "in", "out", "inout", "const", "static",
    "[Differentiable]", "[BackwardDifferentiable]", "no_diff", "fwd_diff", "bwd_diff", "diffPair",
    "[MaxIters(0)]", "[MaxIters(-1)]", "[numthreads(0, 1, 1)]", "[numthreads(4294967297, 1, 1)]",
    "[shader(\"compute\")]",
    "0", "-1", "1e309", "99999999999999999999999999999999", "0x", "1.5e", "2147483648", "-2147483649",
    "1.0f", "0.", "\u00e9", "\u03bb", "\U0001f600", "\u200b", "\x00", "\x7f", "\ufeff",
    "%0", "%x", "!diff.pair<f32>", "func.func", "scf.while", "memref<?xf32>", "^bb0", "\"diff.zero\"",
    "{diff.max_iters = 0 : i64}", "-> ()", ": i64", "i32", "f32", "index", "arith.constant",
]

NUMBERS = ["0", "1", "-1", "3", "0.0", "-0.5", "1e38", "1e39", "1e-45", "65504.0", "4294967295",
           "4294967296", "2147483648", "0x7fffffff", "0xffffffff", "1u", "0u", "2.5h", "1.0l", "1000000",
           "4294967297", "9223372036854775808", "18446744073709551616"]


@st.composite
def mutated(draw, sources: list[Path]) -> str:
    """A real input with one to four token-level mutations."""
    text = draw(st.sampled_from(sources)).read_text()
    tokens = TOKEN.findall(text)
    for _ in range(draw(st.integers(1, 4))):
        n = len(tokens)
        kind = draw(st.sampled_from(
            ["delete", "duplicate", "swap", "insert", "truncate", "replace", "empty", "bytes", "repeat",
             "rename", "renumber", "rename", "renumber"]  # the last two keep the text parseable more often
        ))
        i = draw(st.integers(0, max(0, n - 1)))
        j = draw(st.integers(0, max(0, n - 1)))
        if kind == "delete" and n:
            del tokens[i: i + draw(st.integers(1, 3))]
        elif kind == "duplicate" and n:
            tokens[i:i] = tokens[i: i + draw(st.integers(1, 5))]
        elif kind == "swap" and n:
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "insert":
            tokens.insert(i, draw(st.sampled_from(SPLICES)))
        elif kind == "replace" and n:
            tokens[i] = draw(st.one_of(st.sampled_from(SPLICES), st.text(max_size=4)))
        elif kind == "truncate":
            tokens = tokens[:i]
        elif kind == "empty":
            tokens = [draw(st.sampled_from(["", " ", "\n", "\ufeff", "//", "/*"]))]
        elif kind == "bytes":
            # raw bytes, UTF-8 or not: _write turns the escapes back into the bytes
            tokens.insert(i, draw(st.binary(min_size=1, max_size=6)).decode("utf-8", "surrogateescape"))
        elif kind == "repeat" and n:
            tokens[i:i] = [tokens[i]] * draw(st.integers(50, 300))
        elif kind == "rename":  # one name where the file uses another
            names = sorted({t for t in tokens if t[:1].isalpha() or t[:1] == "_"})
            if names:
                a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
                at = [k for k, t in enumerate(tokens) if t == a]
                tokens[draw(st.sampled_from(at))] = b
        elif kind == "renumber":  # a number where the file has one
            at = [k for k, t in enumerate(tokens) if t[:1].isdigit()]
            if at:
                tokens[draw(st.sampled_from(at))] = draw(st.sampled_from(NUMBERS))
    return "".join(tokens)


# DIFFC_FUZZ_SCALE=20 runs twenty times the examples, with a fresh random seed each run.
SCALE = int(os.environ.get("DIFFC_FUZZ_SCALE", "1"))
FUZZ = settings(max_examples=150 * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _write(tmp_path: Path, name: str, text: str) -> Path:
    f = tmp_path / name
    f.write_bytes(text.encode("utf-8", "surrogateescape"))
    return f


def _assert_clean_failure(rc, err: str, what: str) -> None:
    assert "Traceback (most recent call last)" not in err, f"{what}: traceback\n{err}"
    if rc == 2 and USAGE.search(err):  # argparse: a malformed command line
        return
    assert rc in (0, 1), f"{what}: exit status {rc}\n{err}"
    if rc == 1:
        assert LOCATED.search(err), f"{what}: exit 1 without a diagnostic:\n{err}"
        assert "crashed" not in err, f"{what}: a pass crashed on this input:\n{err}"


def _in_process(fn, argv, capsys) -> tuple[int, str]:
    """Runs a command-line main in-process. Any exception but SystemExit escaping is a crash."""
    try:
        rc = fn(argv)
    except SystemExit as e:  # argparse
        rc = e.code if isinstance(e.code, int) else 1
    return rc, capsys.readouterr().err


@given(text=mutated(SLANG), emit=st.sampled_from(["mlir", "lowered", "opencl"]))
@FUZZ
def test_diffc_compile_mutated_slang(tmp_path, capsys, text, emit):
    f = _write(tmp_path, "fuzz.slang", text)
    rc, err = _in_process(diffc.cli.main, ["compile", str(f), "--emit", emit], capsys)
    _assert_clean_failure(rc, err, f"diffc compile --emit {emit}\n--- input ---\n{text}")
    # a Slang program's diagnostic speaks of the program, not of the IR it was lowered to (a
    # custom derivative whose signature does not fit was once the IR verifier's message)
    heads = [ln for ln in err.split("\n") if LOCATED.match(ln)]  # (not the source lines they quote)
    assert not any(IR_MESSAGE.search(h) for h in heads), \
        f"an IR-level diagnostic for Slang input:\n{err}\n--- input ---\n{text}"
    if rc == 1 and "fuzz.slang:" in err:
        # the source line and a caret under it follow the header
        lines = err.split("\n")  # (splitlines would also split the source line at \v, \f, ...)
        head = next(k for k, ln in enumerate(lines) if "fuzz.slang:" in ln)
        if len(lines) > head + 2:
            assert set(lines[head + 2].strip()) <= {"^"}, err


@given(text=mutated(MLIR), pipeline=st.sampled_from([
    [], ["-p", AD_PIPELINE_SPEC],
    ["--pass-pipeline", "builtin.module(diff-fwd,diff-rev,diff-checkpoint{report=true},diff-lower)"],
    ["-p", "lower-entry-points"], ["-t", "opencl"],
]))
@FUZZ
def test_diffc_opt_mutated_ir(tmp_path, capsys, monkeypatch, text, pipeline):
    # diffc-opt prints any unexpected exception as `error: ...`; DIFFC_TRACEBACK lets those
    # escape here, so that a crash is not mistaken for a diagnostic.
    monkeypatch.setenv("DIFFC_TRACEBACK", "1")
    f = _write(tmp_path, "fuzz.mlir", text)
    out = tmp_path / "out.mlir"
    out.unlink(missing_ok=True)  # tmp_path is shared by the examples of one test
    rc, err = _in_process(diffc_opt.main, [str(f), *pipeline, "-o", str(out)], capsys)
    _assert_clean_failure(rc, err, f"diffc-opt {' '.join(pipeline)}\n--- input ---\n{text}")
    if rc == 1:
        assert not out.exists(), "a failed run wrote its -o file"


PASS_NAMES = ["diff-fwd", "diff-rev", "diff-checkpoint", "diff-lower", "canonicalize", "cse", "lower-entry-points"]


@given(spec=st.lists(
    st.one_of(st.sampled_from(PASS_NAMES), st.sampled_from(SPLICES), st.text(max_size=6),
              st.sampled_from(["{report=true}", "{report=1}", "{report=}", "{=}", "{entry=main}",
                               "{entry=\"\"}", "{nope=1}", "{{", "}}", "builtin.module(", "func.func("])),
    max_size=6).map("".join),
    mlir=st.booleans())
@FUZZ
def test_diffc_opt_mutated_pipeline(tmp_path, capsys, monkeypatch, spec, mlir):
    monkeypatch.setenv("DIFFC_TRACEBACK", "1")
    f = ROOT / "tests/filecheck/passes/diff_rev_while.mlir"
    args = ["--pass-pipeline", f"builtin.module({spec})"] if mlir else ["-p", spec]
    rc, err = _in_process(diffc_opt.main, [str(f), *args], capsys)
    _assert_clean_failure(rc, err, f"diffc-opt {args}")


@given(text=mutated(SLANG))
@settings(FUZZ, max_examples=60 * SCALE)
def test_load_module_mutated_slang(tmp_path, text):
    import diffc

    f = _write(tmp_path, "fuzz.slang", text)
    try:
        diffc.load_module(f)
    except DiffcError as e:
        assert LOCATED.search(str(e)), str(e)


@given(text=mutated(MLIR))
@settings(FUZZ, max_examples=60 * SCALE)
def test_load_module_mutated_ir(text):
    from diffc.runtime.module import load_module_from_string

    try:
        load_module_from_string(text, "fuzz.mlir")
    except DiffcError as e:
        assert LOCATED.search(str(e)), str(e)


TEST_INPUT_LINES = st.sampled_from([
    "//TEST_INPUT:ubuffer(data=[1 2 3 4], stride=4):out,name=outp",
    "//TEST_INPUT: set outp = out ubuffer(data=[0 0 0 0], stride=4)",
    "//TEST_INPUT: set inp = ubuffer(data=[1.0 2.0 3.0 4.0], stride=4)",
]).flatmap(lambda line: st.builds(
    lambda toks, i, s: "".join(toks[:i] + [s] + toks[i + 1:]),
    st.just(TOKEN.findall(line)), st.integers(0, len(TOKEN.findall(line))),
    st.one_of(st.sampled_from(SPLICES), st.sampled_from(["count=-1", "count=99999999999", "stride=8",
                                                         "data=[", "data=[]", "1e400", "nan", "0x10"]),
              st.text(max_size=3))))


@given(annotation=TEST_INPUT_LINES, groups=st.sampled_from(["1,1,1", "2", "0", "-1", "1,,1", "a", "1,1,1,1",
                                                            "99999999999999999999", " 1 ", ""]))
@settings(FUZZ, max_examples=40 * SCALE)
def test_diffc_run_mutated_annotations(tmp_path, capsys, monkeypatch, annotation, groups):
    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    text = (
        f"{annotation}\n"
        "//TEST_INPUT: set inp = ubuffer(data=[1.0 2.0 3.0 4.0], stride=4)\n"
        "RWStructuredBuffer<float> inp;\nRWStructuredBuffer<float> outp;\n"
        '[shader("compute")]\n[numthreads(4, 1, 1)]\n'
        "void computeMain(uint3 tid : SV_DispatchThreadID) { outp[tid.x] = inp[tid.x] * 2.0; }\n"
    )
    f = _write(tmp_path, "fuzz.slang", text)
    rc, err = _in_process(diffc.cli.main, ["run", str(f), "--groups", groups], capsys)
    _assert_clean_failure(rc, err, f"diffc run --groups {groups!r}\n{annotation}")


def _subprocess(*args: str, env: dict | None = None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "DIFFC_DEVICE": "cpu", **(env or {})})


BAD_FILES = [b"", b"\xff\xfe\x00binary\x00", b"float f(float x) { return x", "\u03bb\u00e9".encode()]


def _bad_files(tmp_path, content: bytes) -> tuple[Path, Path]:
    slang = tmp_path / "bad.slang"
    slang.write_bytes(content)
    mlir = tmp_path / "bad.mlir"
    mlir.write_bytes(content + b"\nfunc.func @f(")
    return slang, mlir


@pytest.mark.parametrize("content", BAD_FILES)
def test_bad_files_exit_1_with_a_diagnostic(tmp_path, capsys, monkeypatch, content):
    """diffc compile, diffc run and diffc-opt on an empty, a binary, a cut-off and a non-ASCII file:
    status 1, a located diagnostic, no exception (DIFFC_TRACEBACK lets one escape, rather than
    print as `error: ...`)."""
    monkeypatch.setenv("DIFFC_TRACEBACK", "1")
    slang, mlir = _bad_files(tmp_path, content)
    for main, argv in ((diffc.cli.main, ["compile", str(slang), "--emit", "opencl"]),
                       (diffc.cli.main, ["run", str(slang)]),
                       (diffc_opt.main, [str(mlir)])):
        rc, err = _in_process(main, argv, capsys)
        assert rc == 1, (argv, err)
        assert LOCATED.search(err), (argv, err)


def test_console_entries_exit_1_without_a_traceback(tmp_path):
    """The real console entries, each in a process of its own (the in-process test above holds
    the other files): exit status 1, a diagnostic, no traceback."""
    slang, mlir = _bad_files(tmp_path, BAD_FILES[1])
    for cmd in (["-m", "diffc.cli", "compile", str(slang), "--emit", "opencl"],
                ["-m", "diffc.cli", "run", str(slang)],
                ["-m", "diffc.tools.diffc_opt", str(mlir)]):
        r = _subprocess(*cmd)
        assert r.returncode == 1, (cmd, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and LOCATED.search(r.stderr), (cmd, r.stderr)


# ---- the Python API: calls and dispatch with wrong arguments ------------------------------------

API_IR = """
func.func @poly(%a: f32, %x: f32) -> f32 attributes {diff.differentiable} {
  %ax = arith.mulf %a, %x : f32
  %r = arith.mulf %ax, %x : f32
  func.return %r : f32
}
func.func @count(%n: i32, %x: f32) -> f32 {
  %f = arith.sitofp %n : i32 to f32
  %r = arith.mulf %f, %x : f32
  func.return %r : f32
}
func.func @scale(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}, %factor: f32, %v: vector<2xf32>, %count: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 4, 1, 1>} {
  %past = arith.cmpi uge, %tid, %count : i32
  scf.if %past {
  } else {
    %i = arith.index_cast %tid : i32 to index
    %a = arith.addi %src_off, %i : index
    %v0 = memref.load %src[%a] : memref<?xf32>
    %r = arith.mulf %v0, %factor : f32
    memref.store %r, %src[%a] : memref<?xf32>
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def api_module(tmp_path_factory):
    import diffc

    os.environ.setdefault("DIFFC_DEVICE", "cpu")
    path = tmp_path_factory.mktemp("api") / "api.mlir"
    path.write_text(API_IR)
    return diffc.load_module(path)


def _tensor(dtype, shape, grads):
    import diffc

    t = diffc.Tensor.from_numpy(np.ones(shape, dtype))
    return t.with_grads(zero=True) if grads else t


np = pytest.importorskip("numpy")
VALUES = st.one_of(
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=3), st.lists(st.floats(-2, 2), max_size=4), st.just([[1.0, 2.0], [3.0]]), st.just({"a": 1}),
    st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint32, np.bool_,
                     np.complex64, object]).flatmap(
        lambda dt: st.sampled_from([(), (0,), (3,), (2, 3), (4,)]).map(lambda sh: np.ones(sh, dt))),
    st.builds(_tensor, st.sampled_from([np.float32, np.float64, np.int32, np.float16]),
              st.sampled_from([(), (3,), (2, 3), (4,), (0,)]), st.booleans()),
)
NAMES = st.sampled_from(["a", "x", "n", "src", "factor", "v", "count", "tid", "src_off", "bogus", "_result"])


@given(fn=st.sampled_from(["poly", "count", "scale"]), mode=st.sampled_from(["call", "bwds", "fwds", "dispatch"]),
       args=st.lists(VALUES, max_size=3), kwargs=st.dictionaries(NAMES, VALUES, max_size=5),
       result=st.one_of(st.sampled_from(["tensor", "numpy", "bogus"]), VALUES),
       thread_count=st.one_of(st.integers(-3, 9), st.tuples(st.integers(0, 5), st.integers(0, 2)), VALUES))
@settings(FUZZ, max_examples=150 * SCALE)
def test_api_wrong_arguments_raise_diffc_errors(api_module, fn, mode, args, kwargs, result, thread_count):
    """Whatever is passed, a call either runs or raises the runtime's own error (a DiffcError,
    e.g. CallError naming the argument), never TypeError/KeyError/IndexError from inside."""
    f = getattr(api_module, fn)
    kwargs.pop("_result", None)
    try:
        if mode == "dispatch":
            f.dispatch(thread_count, **kwargs)  # (positional arguments: Python's own TypeError)
            diffc.synchronize()  # a BoundsError comes at the next synchronizing point
        else:
            getattr(f, "__call__" if mode == "call" else mode)(*args, _result=result, **kwargs)
    except DiffcError:
        pass


@given(shape=st.one_of(st.integers(-2, 5), st.lists(st.one_of(st.integers(-1, 4), st.floats(0, 3), st.text(max_size=1)),
                                                       max_size=3), st.text(max_size=2), st.none()),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int8, np.complex64, "nonsense", None, "float16"]),
       method=st.sampled_from(["fill", "copy_from_numpy", "with_grads", "at", "from_numpy"]), value=VALUES)
@settings(FUZZ, max_examples=100 * SCALE)
def test_tensor_api_wrong_arguments_raise_diffc_errors(shape, dtype, method, value):
    import diffc

    os.environ.setdefault("DIFFC_DEVICE", "cpu")
    try:
        if method == "from_numpy":
            diffc.Tensor.from_numpy(value)
            return
        t = diffc.Tensor(shape, dtype) if dtype is not None else diffc.Tensor(shape)
        getattr(t, method)(value)
    except DiffcError:
        pass


# ---- dispatch sizes and buffer lengths ----------------------------------------------------------
# A kernel with no `tid < count` guard, so every launched work-item (thread_count rounded up to
# whole groups of 4) reads src[off + tid] and writes dst[tid]: whatever the sizes, a dispatch (or
# `diffc run`) either gives the right numbers or a located E0011 error, and in both cases every
# element in bounds holds its right value and memory outside the buffers is untouched.

UNGUARDED_IR = """
func.func @twice(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 4, 1, 1>} {
  %i = arith.index_cast %tid : i32 to index
  %a = arith.addi %src_off, %i : index
  %v = memref.load %src[%a] : memref<?xf32>
  %two = arith.constant 2.0 : f32
  %r = arith.mulf %v, %two : f32
  %b = arith.addi %dst_off, %i : index
  memref.store %r, %dst[%b] : memref<?xf32>
  func.return
}
func.func @odd(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}, %n: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 4, 1, 1>} {
  %ok = arith.cmpi slt, %tid, %n : i32
  scf.if %ok {
    %two = arith.constant 2 : i32
    %one = arith.constant 1 : i32
    %t2 = arith.muli %tid, %two : i32
    %k = arith.addi %t2, %one : i32
    %i = arith.index_cast %k : i32 to index
    %b = arith.addi %dst_off, %i : index
    %v = arith.sitofp %tid : i32 to f32
    memref.store %v, %dst[%b] : memref<?xf32>
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def unguarded_module(tmp_path_factory):
    import diffc

    os.environ.setdefault("DIFFC_DEVICE", "cpu")
    path = tmp_path_factory.mktemp("unguarded") / "twice.mlir"
    path.write_text(UNGUARDED_IR)
    return diffc.load_module(path)


@given(n_src=st.integers(0, 12), n_dst=st.integers(0, 12), off_src=st.integers(0, 12), off_dst=st.integers(0, 12),
       thread_count=st.one_of(st.integers(0, 40), st.tuples(st.integers(0, 9), st.integers(0, 3)),
                              st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 2))))
@settings(FUZZ, max_examples=60 * SCALE)
def test_dispatch_sizes_and_buffer_lengths(unguarded_module, n_src, n_dst, off_src, off_dst, thread_count):
    import diffc
    from diffc.runtime.bounds import BoundsError

    off_src, off_dst = min(off_src, n_src), min(off_dst, n_dst)  # Tensor.at itself refuses more
    src_np = np.arange(1, n_src + 1, dtype=np.float32)
    src = diffc.Tensor.from_numpy(src_np)
    dst = diffc.Tensor.from_numpy(np.full(n_dst, -7.0, np.float32))
    counts = [thread_count] if isinstance(thread_count, int) else list(thread_count)
    x = -(-counts[0] // 4) * 4  # the work-items along x (rounded up to whole groups)
    others = int(np.prod(counts[1:])) if len(counts) > 1 else 1
    launched = x if others else 0
    # every work-item of a row (y, z) reads and writes the same elements: index tid.x
    want = np.full(n_dst, -7.0, np.float32)
    bad = False
    for t in range(launched):
        if off_src + t >= n_src or off_dst + t >= n_dst:
            bad = True
        if off_dst + t < n_dst:
            want[off_dst + t] = 2 * src_np[off_src + t] if off_src + t < n_src else 0.0  # a skipped load reads 0
    try:
        unguarded_module.twice.dispatch(thread_count, src=src.at(off_src), dst=dst.at(off_dst))
        diffc.synchronize()  # where a dispatch's error is raised (runtime/pending.py)
        assert not bad, "an access outside a buffer went unreported"
    except BoundsError as e:
        assert bad and "error[E0011]" in str(e) and LOCATED.search(str(e)), str(e)
    except DiffcError as e:  # e.g. an empty tensor the device cannot hold
        assert LOCATED.search(str(e)), str(e)
        return
    assert np.array_equal(dst.to_numpy(), want), (dst.to_numpy(), want)
    assert np.array_equal(src.to_numpy(), src_np)  # read-only input untouched


@given(n_in=st.integers(0, 9), n_out=st.integers(0, 9), groups=st.sampled_from(["1", "2", "1,2", "3,1,1"]))
@settings(FUZZ, max_examples=25 * SCALE)
def test_diffc_run_buffer_lengths(tmp_path, capsys, monkeypatch, n_in, n_out, groups):
    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    data_in = " ".join(f"{k + 1}.0" for k in range(n_in))
    data_out = " ".join("0" for _ in range(n_out))
    text = (
        f"//TEST_INPUT: set inp = ubuffer(data=[{data_in}], stride=4)\n"
        f"//TEST_INPUT: set outp = out ubuffer(data=[{data_out}], stride=4)\n"
        "RWStructuredBuffer<float> inp;\nRWStructuredBuffer<float> outp;\n"
        '[shader("compute")]\n[numthreads(4, 1, 1)]\n'
        "void computeMain(uint3 tid : SV_DispatchThreadID) { outp[tid.x] = inp[tid.x] * 2.0; }\n"
    )
    f = _write(tmp_path, "lengths.slang", text)
    rc = diffc.cli.main(["run", str(f), "--groups", groups])
    captured = capsys.readouterr()
    err = captured.err
    _assert_clean_failure(rc, err, f"diffc run --groups {groups} with {n_in} / {n_out} elements")
    threads = 4 * int(groups.split(",")[0])
    if n_in >= threads and n_out >= threads:
        assert rc == 0, err
        values = [float(v) for v in captured.out.split("\n")[1:] if v.strip()]
        assert values == [2.0 * (k + 1) if k < threads else 0.0 for k in range(n_out)], captured.out
    elif rc == 1 and "E0011" not in err:
        return  # refused before the launch, located (an empty buffer)
    else:
        assert rc == 1 and f"{f}:" in err and "error[E0011]" in err, err


@given(n_dst=st.integers(0, 20), off=st.integers(0, 20), n=st.integers(-3, 12), thread_count=st.integers(0, 12))
@settings(FUZZ, max_examples=60 * SCALE)
def test_guarded_strided_stores_and_counts(unguarded_module, n_dst, off, n, thread_count):
    """dst[off + 2 tid + 1] = tid for tid < n (a signed compare): launch-time proofs (with the
    guard's count) never skip a check that would have failed."""
    import diffc
    from diffc.runtime.bounds import BoundsError

    off = min(off, n_dst)
    dst = diffc.Tensor.from_numpy(np.full(n_dst, -7.0, np.float32))
    launched = -(-thread_count // 4) * 4
    want, bad = np.full(n_dst, -7.0, np.float32), False
    for t in range(min(launched, max(n, 0))):
        if off + 2 * t + 1 < n_dst:
            want[off + 2 * t + 1] = t
        else:
            bad = True
    try:
        unguarded_module.odd.dispatch(thread_count, dst=dst.at(off), n=n)
        got = dst.to_numpy()
        assert not bad, "an access outside a buffer went unreported"
    except BoundsError as e:
        assert bad and LOCATED.search(str(e)), str(e)
        got = dst.to_numpy()
    except DiffcError as e:
        assert LOCATED.search(str(e)), str(e)
        return
    assert np.array_equal(got, want), (got, want)
