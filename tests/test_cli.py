"""`diffc` command: --emit stages, TEST_INPUT formats, located errors with exit 1 and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from diffc.cli_run import parse_test_inputs
from diffc.diagnostics import DiffcError

ROOT = Path(__file__).resolve().parents[1]


def diffc(*args: str, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "diffc.cli", *args], capture_output=True, text=True,
        env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300, cwd=cwd,
    )


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


def test_emit_stages(kernel_file):
    mlir = diffc("compile", str(kernel_file), "--emit", "mlir")
    assert mlir.returncode == 0, mlir.stderr
    assert "diff.bwd_diff @sq" in mlir.stdout and "memref.get_global @inp" in mlir.stdout
    low = diffc("compile", str(kernel_file), "--emit", "lowered")
    assert low.returncode == 0, low.stderr
    assert "diff." not in low.stdout.replace("diff.differentiable", "")
    assert "kernel.entry" in low.stdout and "kernel.global_id 0" in low.stdout
    assert "memref.get_global" not in low.stdout
    cl = diffc("compile", str(kernel_file), "--emit", "opencl")
    assert cl.returncode == 0, cl.stderr
    assert "__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void computeMain(" in cl.stdout
    assert "get_global_id(0)" in cl.stdout


def test_run_prints_out_buffers_like_slang(kernel_file):
    r = diffc("run", str(kernel_file), "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["type: float", "2.000000", "4.000000", "6.000000", "8.000000"]


def test_run_printf_main(tmp_path):
    f = tmp_path / "p.slang"
    f.write_text('void main() { float a = 1.5; int n = 3; printf("a=%f n=%d 100%%\\n", a, n); }\n')
    r = diffc("run", str(f))
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
        ("//TEST_INPUT:ubuffer(data=[1 2], stride=8):out,name=a", "stride=8"),
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


def test_error_frontend(tmp_path):
    f = tmp_path / "bad.slang"
    f.write_text("void main() {\n    float x = ;\n}\n")
    _assert_clean_error(diffc("run", str(f)), f"{f}:2:", "error[E0001]")
    _assert_clean_error(diffc("compile", str(f), "--emit", "mlir"), f"{f}:2:")


def test_error_bad_annotation(tmp_path):
    f = tmp_path / "ann.slang"
    f.write_text(KERNEL.replace("stride=4):name=inp", "stride=2):name=inp"))
    _assert_clean_error(diffc("run", str(f)), f"{f}:1:1: error[test-input]", "stride=2")


def test_error_unknown_entry(kernel_file):
    _assert_clean_error(diffc("run", str(kernel_file), "--entry", "nope"), "unknown entry point 'nope'", "computeMain")


def test_error_missing_buffer_annotation(tmp_path):
    f = tmp_path / "nobuf.slang"
    f.write_text(KERNEL.replace("//TEST_INPUT:ubuffer(data=[1.0 2.0 3.0 4.0], stride=4):name=inp\n", ""))
    _assert_clean_error(diffc("run", str(f)), "buffer 'inp'", "TEST_INPUT")


def test_error_no_entry(tmp_path):
    f = tmp_path / "lib.slang"
    f.write_text("float f(float x) { return x; }\n")
    _assert_clean_error(diffc("run", str(f)), "no entry point")


def test_error_bad_groups(kernel_file):
    _assert_clean_error(diffc("run", str(kernel_file), "--groups", "0,x"), "--groups")


def test_error_missing_file(tmp_path):
    _assert_clean_error(diffc("run", str(tmp_path / "none.slang")), "no such file")


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


def test_version():
    r = diffc("version")
    assert r.returncode == 0 and r.stdout.strip()


POINTER_KERNEL = """\
//TEST_INPUT: set src = ubuffer(data=[1.5 2.5 3.5 4.5], stride=4)
//TEST_INPUT: set dst = out ubuffer(data=[0 0 0 0], stride=4)
func.func @twice(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"},
                 %src: memref<?xf32>, %src_off: index, %dst: memref<?xf32>, %dst_off: index)
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


def test_run_binds_pointer_parameters_by_name(tmp_path):
    f = tmp_path / "ptr.mlir"
    f.write_text(POINTER_KERNEL)
    r = diffc("run", str(f))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["type: float", "3.000000", "5.000000", "7.000000", "9.000000"]


def test_error_scalar_parameter_is_located(tmp_path):
    f = tmp_path / "scalar.mlir"
    f.write_text(POINTER_KERNEL.replace("%dst_off: index)", "%dst_off: index, %count: i32)"))
    r = diffc("run", str(f))
    _assert_clean_error(r, f"{f}:4:", "error[run-parameter]: entry point 'twice' has a parameter 'count' of type i32",
                        "m.twice.dispatch(...)")
    lines = r.stderr.splitlines()
    assert lines[1].strip().startswith("%src: memref<?xf32>") and lines[2].strip() == "^"
    col = int(lines[0].split(":")[2])
    assert lines[1][4 + col - 1:].startswith("%count")  # the caret's column is the parameter's
