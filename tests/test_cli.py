"""`diffc` command: --emit stages, TEST_INPUT formats, located errors with exit 1 and no traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from diffc.cli_run import parse_test_inputs
from diffc.diagnostics import DiffcError

ROOT = Path(__file__).resolve().parents[1]


KERNEL = """\
//TEST_INPUT:ubuffer(data=[1.0 2.0 3.0 4.0], stride=4):name=inp
RWStructuredBuffer<float> inp;
//TEST_INPUT: set outp = out ubuffer(data=[0 0 0 0], stride=4)
RWStructuredBuffer<float> outp;

[Differentiable]
float sq(float x) { return x * x; }

[shader("compute")]
[numthreads(4, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    int i = int(tid.x);
    var p = diffPair(inp[i], 0.0);
    bwd_diff(sq)(p, 1.0);
    outp[i] = p.d;
}
"""


@pytest.fixture
def kernel_file(tmp_path):
    f = tmp_path / "k.slang"
    f.write_text(KERNEL)
    return f


def test_emit_stages(diffc_cli, kernel_file):
    mlir = diffc_cli("compile", str(kernel_file), "--emit", "mlir")
    assert mlir.returncode == 0, mlir.stderr
    assert "diff.bwd_diff @sq" in mlir.stdout and "memref.get_global @inp" in mlir.stdout
    low = diffc_cli("compile", str(kernel_file), "--emit", "lowered")
    assert low.returncode == 0, low.stderr
    # no derivative ops or marks are left; the kernel ABI roles (dialects/abi.py) stay
    assert "diff." not in low.stdout.replace("diff.differentiable", "").replace("diff.abi", "")
    assert '%inp: memref<?xf32> {diff.abi = #diff.abi<buffer>}' in low.stdout
    assert "kernel.entry" in low.stdout and "kernel.global_id 0" in low.stdout
    assert "memref.get_global" not in low.stdout
    cl = diffc_cli("compile", str(kernel_file), "--emit", "opencl")
    assert cl.returncode == 0, cl.stderr
    assert "__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void computeMain(" in cl.stdout
    assert "get_global_id(0)" in cl.stdout


def test_run_prints_out_buffers_by_name(diffc_cli, kernel_file):
    r = diffc_cli("run", str(kernel_file), "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["outp: float", "2.000000", "4.000000", "6.000000", "8.000000"]


def test_run_prints_out_buffers_like_slang_on_request(diffc_cli, kernel_file):
    r = diffc_cli("run", str(kernel_file), "--device", "cpu", "--slang-output")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["type: float", "2.000000", "4.000000", "6.000000", "8.000000"]


def test_slang_data_reads_each_element_as_slang_runner_words():
    """--slang-data: an integer literal is its 32-bit pattern whatever the element type, any
    other number the pattern of that float32 (Slang's runner), not a number of the element type."""
    import numpy as np

    from diffc.cli_run import _array

    text = ("//TEST_INPUT:ubuffer(data=[2 1.5 -1 0x3f800000], stride=4):out,name=f\n"
            "//TEST_INPUT:ubuffer(data=[1.0 -3], stride=4, count=3):out,name=i\n")
    f, i = parse_test_inputs(text, "t.slang", slang_words=True)
    assert _array(f, np.dtype(np.float32)).view(np.uint32).tolist() == [2, 0x3FC00000, 0xFFFFFFFF, 0x3F800000]
    assert _array(i, np.dtype(np.int32)).tolist() == [0x3F800000, -3, 0]
    f_plain, i_plain = parse_test_inputs(text.replace("0x3f800000", "1"), "t.slang")
    assert _array(f_plain, np.dtype(np.float32)).tolist() == [2.0, 1.5, -1.0, 1.0]
    assert _array(i_plain, np.dtype(np.int32)).tolist() == [1, -3, 0]
    bad = parse_test_inputs("//TEST_INPUT:ubuffer(data=[4294967296], stride=4):name=a\n", "t.slang", slang_words=True)
    with pytest.raises(DiffcError, match="does not fit in 32 bits"):
        _array(bad[0], np.dtype(np.float32))


def test_run_slang_data_end_to_end(diffc_cli, tmp_path):
    f = tmp_path / "w.slang"
    f.write_text(KERNEL.replace("data=[1.0 2.0 3.0 4.0]", "data=[1065353216 2.0 3.0 4.0]"))
    slang = diffc_cli("run", str(f), "--device", "cpu", "--slang-data")
    assert slang.returncode == 0, slang.stderr
    assert slang.stdout.splitlines() == ["outp: float", "2.000000", "4.000000", "6.000000", "8.000000"]  # 2 * 1.0
    plain = diffc_cli("run", str(f), "--device", "cpu")
    assert plain.returncode == 0, plain.stderr
    assert float(plain.stdout.splitlines()[1]) == pytest.approx(2 * 1065353216.0)


def test_run_printf_main(diffc_cli, tmp_path):
    f = tmp_path / "p.slang"
    f.write_text('void main() { float a = 1.5; int n = 3; printf("a=%f n=%d 100%%\\n", a, n); }\n')
    r = diffc_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "a=1.500000 n=3 100%\n"


def test_test_input_formats():
    text = (
        "//TEST_INPUT:ubuffer(data=[1 2 3], stride=4):out,name=a\n"
        "//TEST_INPUT: set b = out ubuffer(data=[4, 5], stride=4)\n"
        "//TEST_INPUT:ubuffer(data=[7], stride=4):name=c\n"
        "//TEST_INPUT: set d = ubuffer(stride=4, count=8)\n"
    )
    bufs = parse_test_inputs(text, "t.slang")
    assert [(b.name, b.data, b.out, b.count) for b in bufs] == [
        ("a", ["1", "2", "3"], True, None),
        ("b", ["4", "5"], True, None),
        ("c", ["7"], False, None),
        ("d", [], False, 8),
    ]
    assert bufs[1].where.line == 2


@pytest.mark.parametrize(
    "line,message",
    [
        ("//TEST_INPUT:ubuffer(data=[1 2], stride=6):out,name=a", "stride=6"),
        ("//TEST_INPUT:ubuffer(data=[1 2], stride=4):out", "no name=NAME"),
        ("//TEST_INPUT: what is this", "cannot read this annotation"),
        ("//TEST_INPUT:ubuffer(data=[1 2], stride=4):out,bogus,name=a", "unknown flag 'bogus'"),
    ],
)
def test_bad_annotation_is_located(line, message):
    with pytest.raises(DiffcError) as e:
        parse_test_inputs("float x;\n" + line + "\n", "t.slang")
    assert str(e.value).startswith("t.slang:2:1: error[test-input]: TEST_INPUT:")
    assert message in str(e.value)


def _assert_clean_error(r, *needles):
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in r.stderr, r.stderr


def test_error_frontend(diffc_cli, tmp_path):
    f = tmp_path / "bad.slang"
    f.write_text("void main() {\n    float x = ;\n}\n")
    _assert_clean_error(diffc_cli("run", str(f)), f"{f}:2:", "error[E0001]")
    _assert_clean_error(diffc_cli("compile", str(f), "--emit", "mlir"), f"{f}:2:")


def test_error_bad_annotation(diffc_cli, tmp_path):
    f = tmp_path / "ann.slang"
    f.write_text(KERNEL.replace("stride=4):name=inp", "stride=2):name=inp"))
    _assert_clean_error(diffc_cli("run", str(f)), f"{f}:1:1: error[test-input]", "stride=2")


VECTOR_KERNEL = """\
//TEST_INPUT:ubuffer(data=[1 2 3 -1 4 5 6 -1], stride=16):name=inp
RWStructuredBuffer<float3> inp;
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0], stride=12):out,name=packed
RWStructuredBuffer<float3> packed;
//TEST_INPUT: set wide = out ubuffer(data=[7 7 7 7 7 7 7 7], stride=16)
RWStructuredBuffer<float3> wide;
//TEST_INPUT: set four = out ubuffer(data=[0 0 0 0 0 0 0 0], stride=4)
RWStructuredBuffer<float4> four;
//TEST_INPUT: set ints = out ubuffer(data=[0 0 0 0], stride=8)
RWStructuredBuffer<int2> ints;
[shader("compute")]
[numthreads(2, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    float3 v = inp[tid.x];
    packed[tid.x] = v * 2.0;
    wide[tid.x] = v + 0.5;
    four[tid.x] = float4(v, float(tid.x));
    ints[tid.x] = int2(int(v.x), -int(v.z));
}
"""


def test_run_buffers_of_vectors_with_their_stride(diffc_cli, tmp_path):
    """Elements are read every `stride` bytes of data (padding words untouched), tightly packed
    when the stride is smaller than the vector (a float4 buffer with stride=4, as Slang's tests
    write it); OpenCL's float3 takes 16 bytes on the device."""
    f = tmp_path / "vec.slang"
    f.write_text(VECTOR_KERNEL)
    r = diffc_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    blocks = re.split(r"^(\w+): (\w+)$", r.stdout, flags=re.M)[1:]  # name, type, values, name, ...
    names, types = blocks[0::3], blocks[1::3]
    values = [[float(x) for x in b.split()] for b in blocks[2::3]]
    assert names == ["packed", "wide", "four", "ints"] and types == ["float", "float", "float", "int"]
    assert values[0] == [2, 4, 6, 8, 10, 12]
    assert values[1] == [1.5, 2.5, 3.5, 7, 4.5, 5.5, 6.5, 7]
    assert values[2] == [1, 2, 3, 0, 4, 5, 6, 1]
    assert values[3] == [1, -3, 4, -6]


def test_stride_that_does_not_fit_a_scalar_buffer_is_located(diffc_cli, tmp_path):
    f = tmp_path / "ann.slang"
    f.write_text(KERNEL.replace("stride=4):name=inp", "stride=8):name=inp"))
    _assert_clean_error(diffc_cli("run", str(f)), f"{f}:1:1: error[test-input]", "stride=8")


def test_error_unknown_entry(diffc_cli, kernel_file):
    _assert_clean_error(diffc_cli("run", str(kernel_file), "--entry", "nope"), "unknown entry point 'nope'",
                        "computeMain")


def test_error_missing_buffer_annotation(diffc_cli, tmp_path):
    f = tmp_path / "nobuf.slang"
    f.write_text(KERNEL.replace("//TEST_INPUT:ubuffer(data=[1.0 2.0 3.0 4.0], stride=4):name=inp\n", ""))
    _assert_clean_error(diffc_cli("run", str(f)), "buffer 'inp'", "TEST_INPUT")


def test_error_no_entry(diffc_cli, tmp_path):
    f = tmp_path / "lib.slang"
    f.write_text("float f(float x) { return x; }\n")
    _assert_clean_error(diffc_cli("run", str(f)), "no entry point")


def test_error_bad_groups(diffc_cli, kernel_file):
    _assert_clean_error(diffc_cli("run", str(kernel_file), "--groups", "0,x"), "--groups")


def test_error_missing_file(diffc_cli, tmp_path):
    _assert_clean_error(diffc_cli("run", str(tmp_path / "none.slang")), "no such file")


def test_error_opencl_build(tmp_path, monkeypatch, capsys):
    # An OpenCL build failure is a located diagnostic of the generated source, not a traceback.
    from diffc import cli
    from diffc.runtime import program

    f = tmp_path / "p.slang"
    f.write_text('void main() { printf("%f\\n", 1.0); }\n')
    real = program.build_program
    monkeypatch.setattr(program, "build_program", lambda src, opts=(): real(src + "\nthis is not C;\n", opts))
    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    monkeypatch.setenv("DIFFC_CACHE_DIR", "off")
    assert cli.main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    assert "error[opencl-build]" in err and "this is not C" in err and "Traceback" not in err


def test_version(diffc_cli):
    r = diffc_cli("version")
    assert r.returncode == 0 and r.stdout.strip()
    flag = diffc_cli("--version")
    assert flag.returncode == 0 and flag.stdout == r.stdout


def test_help_lists_every_command(diffc_cli):
    r = diffc_cli("--help")
    assert r.returncode == 0, r.stderr
    listed = {ln.split()[0] for ln in r.stdout.split("COMMAND\n", 2)[-1].splitlines() if ln.startswith("    ")}
    assert {"version", "demo", "compile", "run", "check", "suite"} <= listed
    for command in ("check", "suite"):  # each answers its own -h
        sub = diffc_cli(command, "-h")
        assert sub.returncode == 0 and sub.stdout.startswith(f"usage: diffc {command}")


LIBRARY = """\
[Differentiable]
float cube(float x) { return x * x * x; }
float slope(float x) {
    var p = diffPair(x, 0.0);
    bwd_diff(cube)(p, 1.0);
    return p.d;
}
"""


@pytest.mark.parametrize("emit", ["lowered", "opencl"])
def test_compile_a_module_without_entry_point_shows_its_functions(diffc_cli, tmp_path, emit):
    f = tmp_path / "lib.slang"
    f.write_text(LIBRARY)
    r = diffc_cli("compile", str(f), "--emit", emit)
    assert r.returncode == 0, r.stderr
    assert f"note: {f} has no entry point" in r.stderr and "error" not in r.stderr
    if emit == "lowered":  # the derivative the passes made, and no diff op left
        assert "func.func @cube_bwd" in r.stdout and "diff.bwd_diff" not in r.stdout
    else:
        assert "float slope(float x)" in r.stdout and "cube_bwd(" in r.stdout
    if emit == "opencl":  # (once) an example module without entry point, with the default --emit
        assert diffc_cli("compile", str(ROOT / "examples" / "poly.slang")).returncode == 0


POINTER_KERNEL = """\
//TEST_INPUT: set src = ubuffer(data=[1.5 2.5 3.5 4.5], stride=4)
//TEST_INPUT: set dst = out ubuffer(data=[0 0 0 0], stride=4)
func.func @twice(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"},
                 %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">})
    attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 4, 1, 1>} {
  %i = arith.index_cast %tid : i32 to index
  %a = arith.addi %src_off, %i : index
  %v = memref.load %src[%a] : memref<?xf32>
  %r = arith.addf %v, %v : f32
  %b = arith.addi %dst_off, %i : index
  memref.store %r, %dst[%b] : memref<?xf32>
  func.return
}
"""


def test_run_binds_pointer_parameters_by_name(diffc_cli, tmp_path):
    f = tmp_path / "ptr.mlir"
    f.write_text(POINTER_KERNEL)
    r = diffc_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["dst: float", "3.000000", "5.000000", "7.000000", "9.000000"]


def test_error_scalar_parameter_is_located(diffc_cli, tmp_path):
    f = tmp_path / "scalar.mlir"
    f.write_text(POINTER_KERNEL.replace('of "dst">})', 'of "dst">}, %count: i32)'))
    r = diffc_cli("run", str(f))
    _assert_clean_error(r, f"{f}:4:", "error[run-parameter]: entry point 'twice' has a parameter 'count' of type i32",
                        "m.twice.dispatch(...)")
    lines = r.stderr.splitlines()
    assert lines[1].strip().startswith("%src: memref<?xf32>") and lines[2].strip() == "^"
    col = int(lines[0].split(":")[2])
    assert lines[1][4 + col - 1:].startswith("%count")  # the caret's column is the parameter's


def test_error_unknown_device_env_is_one_line(kernel_file):
    # DIFFC_DEVICE is honoured by `diffc run` (no --device given) and a bad one is one line.
    r = subprocess.run([sys.executable, "-m", "diffc.cli", "run", str(kernel_file)], capture_output=True, text=True,
                       env={**os.environ, "DIFFC_DEVICE": "tpu"}, timeout=300)
    _assert_clean_error(r, "DIFFC_DEVICE must be one of gpu, cpu, auto; got 'tpu'")
    assert r.stderr.strip().count("\n") == 0, r.stderr


def _in_process(argv, capsys) -> tuple[int, str]:
    from diffc import cli

    rc = cli.main(argv)
    return rc, capsys.readouterr().err


def test_error_groups_too_large(kernel_file, capsys):
    # 1e20 groups used to reach pyopencl and fail inside it with std::bad_cast.
    rc, err = _in_process(["run", str(kernel_file), "--groups", "99999999999999999999"], capsys)
    assert rc == 1 and "--groups must be 1 to 3 integers from 1 to 2147483647" in err and "Traceback" not in err


@pytest.mark.parametrize("numthreads,col,message", [
    ("-1, 1, 1", 13, "error[E0003]: [numthreads] takes one to three positive integer constants"),
    ("0, 1, 1", 13, "error[E0003]: [numthreads] takes one to three positive integer constants"),
    ("2.5", 13, "error[E0003]: [numthreads] takes one to three positive integer constants"),
    ("1, 1, 1, 1", 22, "error[E0003]: [numthreads] takes one to three positive integer constants"),
    ("100000, 1, 1", 2, "error[run-launch]: [numthreads(100000, 1, 1)] is 100000 work-items per group"),
])
def test_error_bad_numthreads_is_located(tmp_path, capsys, monkeypatch, numthreads, col, message):
    # -1 was dropped silently (a group of 1), 0 failed in the OpenCL compiler, 100000 in
    # clEnqueueNDRangeKernel with a pyopencl traceback.
    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    f = tmp_path / "nt.slang"
    f.write_text(KERNEL.replace("[numthreads(4, 1, 1)]", f"[numthreads({numthreads})]"))
    rc, err = _in_process(["run", str(f)], capsys)
    assert rc == 1 and err.startswith(f"{f}:10:{col}: {message}") and "Traceback" not in err, err
    assert err.splitlines()[1].strip() == f"[numthreads({numthreads})]"


def test_error_file_not_utf8(tmp_path, capsys):
    import diffc

    f = tmp_path / "bin.slang"
    f.write_bytes(b"float f(float x) {\n  return x;\xff\xfe\n}\n")
    rc, err = _in_process(["compile", str(f), "--emit", "mlir"], capsys)
    assert rc == 1 and err.startswith(f"{f}:2:12: error: the file is not UTF-8 text (byte 0xff)"), err
    with pytest.raises(DiffcError, match=r"bin.slang:2:12: error: the file is not UTF-8 text"):
        diffc.load_module(f)


@pytest.mark.parametrize("line,annotation,message", [
    # used to allocate 373 GiB on the host (MemoryError) before anything was checked
    (1, "//TEST_INPUT: set outp = out ubuffer(count=99999999999, stride=4)",
     "TEST_INPUT: 'outp' has 99999999999 elements (399999999996 bytes); the device allocates at most"),
    # used to be numpy's OverflowError
    (3, "//TEST_INPUT: set n = out ubuffer(data=[2147483648], stride=4)",
     "TEST_INPUT: element 2147483648 of 'n' does not fit in its int32 elements"),
    # a declared but unused buffer is printed with its data: the same limit holds
    (5, "//TEST_INPUT: set spare = out ubuffer(count=99999999999, stride=4)",
     "TEST_INPUT: 'spare' has 99999999999 elements"),
])
def test_error_test_input_sizes_and_values(tmp_path, capsys, monkeypatch, line, annotation, message):
    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    lines = [
        "//TEST_INPUT: set outp = out ubuffer(data=[1], stride=4)", "RWStructuredBuffer<float> outp;",
        "//TEST_INPUT: set n = out ubuffer(data=[7], stride=4)", "RWStructuredBuffer<int> n;",
        "//TEST_INPUT: set spare = out ubuffer(data=[0], stride=4)",
        '[shader("compute")]', "[numthreads(1, 1, 1)]",
        "void computeMain(uint3 tid : SV_DispatchThreadID) { outp[tid.x] = outp[tid.x] * 2.0; n[0] = n[0] + 1; }",
    ]
    lines[line - 1] = annotation
    f = tmp_path / "ti.slang"
    f.write_text("\n".join(lines) + "\n")
    rc, err = _in_process(["run", str(f)], capsys)
    assert rc == 1 and err.startswith(f"{f}:{line}:1: error[test-input]: {message}"), err
    assert "Traceback" not in err and capsys.readouterr().out == ""


def test_error_opencl_build_shows_log_and_the_line_it_names(tmp_path, monkeypatch, capsys):
    from diffc import cli
    from diffc.runtime import program

    f = tmp_path / "p.slang"
    f.write_text('void main() { printf("%f\\n", 1.0); }\n')
    real = program.build_program
    monkeypatch.setattr(program, "build_program",
                        lambda src, opts=(): real(src.replace("printf(", "printf(undeclared_name + "), opts))
    monkeypatch.setenv("DIFFC_DEVICE", "cpu")
    monkeypatch.setenv("DIFFC_CACHE_DIR", "off")
    assert cli.main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "error[opencl-build]: the OpenCL compiler rejected a generated program", err
    assert any("undeclared_name" in ln and "error" in ln for ln in lines[1:lines.index("generated source:")]), err
    marked = next(k for k, ln in enumerate(lines) if ln.lstrip().startswith(">") and "printf(undeclared_name" in ln)
    assert lines[marked + 1].index("^") == lines[marked].index("undeclared_name"), err  # the caret under it
    assert "Traceback" not in err


def test_compile_into_a_closed_pipe_ends_quietly(tmp_path):
    """`diffc compile ... | head -1`: the reader is gone before diffc writes (here: closed at
    once); diffc exits as a process killed by SIGPIPE does (141), without a BrokenPipeError
    traceback."""
    src = tmp_path / "f.slang"
    src.write_text("[Differentiable] float f(float x) { return x * x; }\n")
    p = subprocess.Popen([sys.executable, "-m", "diffc.cli", "compile", str(src), "--emit", "mlir"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # long before the front end has anything to print (imports alone take longer)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err


BOUNDED_WHILE_MAIN = """\
[Differentiable]
float power(float x, int n) {
    float y = x;
    int i = 0;
    [MaxIters(8)]
    while (i < n) { y = y * x; i++; }
    return y;
}
void main() {
    var x = diffPair(X0, 0.0);
    bwd_diff(power)(x, N, 1.0);
    printf("dx: %f\\n", x.d);
}
"""


def _power(x: float, n: int) -> float:  # what BOUNDED_WHILE_MAIN's power computes, in float64
    y = x
    for _ in range(n):
        y = y * x
    return y


@pytest.mark.parametrize("x0, n", [(2.0, 3), (1.5, 7)])
def test_run_main_with_a_bounded_while_under_bwd_diff(diffc_cli, tmp_path, x0, n):
    # the loop's status buffer is a parameter of main(), which has none of its own
    f = tmp_path / "w.slang"
    f.write_text(BOUNDED_WHILE_MAIN.replace("X0", str(x0)).replace("N", str(n)))
    r = diffc_cli("run", str(f))
    assert r.returncode == 0, r.stderr
    h = 1e-6
    expected = (_power(x0 + h, n) - _power(x0 - h, n)) / (2 * h)
    got = float(r.stdout.split()[-1])
    assert got == pytest.approx(expected, rel=1e-5)


def test_run_main_whose_bounded_while_overruns(diffc_cli, tmp_path):
    f = tmp_path / "w.slang"
    f.write_text(BOUNDED_WHILE_MAIN.replace("X0", "1.5").replace("N", "20"))
    r = diffc_cli("run", str(f))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{f}:5:5: error[E0010]" in r.stderr and "[MaxIters(8)]" in r.stderr
    grown = diffc_cli("run", "--grow-tape", str(f))
    assert grown.returncode == 0, grown.stderr
    assert grown.stdout.count("dx: ") == 1  # the overrun run's printf is replaced by the rerun's
    h = 1e-6
    expected = (_power(1.5 + h, 20) - _power(1.5 - h, 20)) / (2 * h)
    assert float(grown.stdout.split()[-1]) == pytest.approx(expected, rel=1e-5)
