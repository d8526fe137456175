"""`diffc suite`'s reading of Slang's test lines (diffc/conformance.py), on small files of its own:
FileCheck's `{{regex}}` patterns, the `-compute-dispatch X,Y,Z` option and `-entry NAME`."""

from __future__ import annotations

from diffc import conformance

KERNEL = """//TEST(compute):COMPARE_COMPUTE_EX(filecheck-buffer=CHECK):-slang -compute -shaderobj -output-using-type{dispatch}
//TEST_INPUT:ubuffer(data=[0 0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
[numthreads(2, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {{ outputBuffer[tid.x] = tid.x + 0.5; }}
// CHECK: type: float
// CHECK-NEXT: 0.5{{{{0+}}}}
// CHECK-NEXT: 1.500000
// CHECK-NEXT: {{{{2|0}}}}.{{{{[05]}}}}00000
// CHECK-NEXT: 3.500000
"""


def test_regex_parts_of_a_pattern_match_as_regular_expressions():
    assert conformance.line_matches("-0.{{9[4-9][0-9]}}000", "-0.957000")
    assert not conformance.line_matches("-0.{{9[4-9][0-9]}}000", "-0.463000")
    assert conformance.line_matches("x{{.*}}(y)", "x + 2 (y)")  # literal parts stay literal
    assert not conformance.line_matches("x{{.*}}(y)", "x + 2 y")


def test_compute_dispatch_sets_the_work_groups(tmp_path):
    path = tmp_path / "k.slang"
    path.write_text(KERNEL.format(dispatch=" -compute-dispatch 2,1,1"))
    case = conformance.case_of(path)
    assert case.run_args == ["--slang-output", "--slang-data", "--groups", "2,1,1", str(path)]
    results = conformance.run_suite([case], jobs=1, timeout=120.0)
    assert results[path] is None  # all four elements written: two groups of two ran


def test_without_compute_dispatch_one_group_runs(tmp_path):
    path = tmp_path / "k.slang"
    path.write_text(KERNEL.format(dispatch=""))
    case = conformance.case_of(path)
    assert case.run_args == ["--slang-output", "--slang-data", str(path)]
    results = conformance.run_suite([case], jobs=1, timeout=120.0)
    assert "3.500000" in results[path]  # element 3 was never written: the check says so


INTERPRET = """//TEST:SIMPLE(filecheck=CHECK_HLSL): -target hlsl -stage compute -entry main
//TEST:INTERPRET(filecheck=CHECK_INTERP): -entry printer
// CHECK_INTERP: picked=7
RWStructuredBuffer<float> out_buf;
void printer() { printf("picked=%d\\n", 7); }
[shader("compute")] [numthreads(1, 1, 1)] void main() { out_buf[0] = 1.0; }
"""


def test_an_interpret_line_names_its_entry(tmp_path):
    # the file's compute shader would be the default entry; the active test line names another
    path = tmp_path / "k.slang"
    path.write_text(INTERPRET)
    case = conformance.case_of(path)
    assert case.kind == "interpret" and case.run_args == ["--slang-output", "--slang-data", "--entry", "printer", str(path)]
    assert conformance.run_suite([case], jobs=1, timeout=120.0)[path] is None
