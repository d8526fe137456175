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


RACY_KERNEL = """//TEST(compute):COMPARE_COMPUTE_EX(filecheck-buffer=CHECK):-slang -compute -output-using-type -compute-dispatch 3,1,1
//TEST_INPUT:ubuffer(data=[0 0], stride=4):name=count
RWStructuredBuffer<int> count;
//TEST_INPUT:ubuffer(data=[0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
[numthreads(2, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID{extra}) {{
    InterlockedAdd(count[0], int(tid.x) + 1);
    AllMemoryBarrierWithGroupSync();
    if (tid.x == 0) outputBuffer[0] = float(count[0]);
}}
// CHECK: type: float
// CHECK-NEXT: 21.0
"""


def test_one_group_runs_all_work_items_in_one_group(tmp_path):
    # three groups of two add 1..6 = 21; only in one group does the barrier wait for all adds
    src = tmp_path / "src"
    src.mkdir()
    path = src / "racy.slang"
    path.write_text(RACY_KERNEL.format(extra=""))
    case = conformance.case_of(path)
    folded = conformance.one_group(case, tmp_path)
    assert folded is not None and folded.made_from == path and folded.groups is None
    assert "[numthreads(6, 1, 1)]" in folded.path.read_text()
    assert conformance.run_suite([folded], jobs=1, timeout=120.0)[path] is None
    # group ids mean something else in one group: such a file is not folded
    path.write_text(RACY_KERNEL.format(extra=", uint3 g : SV_GroupID"))
    assert conformance.one_group(conformance.case_of(path), tmp_path) is None


def test_a_known_slang_error_is_known_only_with_exactly_its_listed_values(tmp_path, monkeypatch):
    path = tmp_path / "w.slang"
    path.write_text("//TEST(compute):COMPARE_COMPUTE_EX(filecheck-buffer=CHECK):-slang -compute\n"
                    "// CHECK: type: float\n// CHECK-NEXT: 1.0\n// CHECK-NEXT: 0.0\n// CHECK-NEXT: 3.0\n")
    case = conformance.case_of(path)
    monkeypatch.setitem(conformance.SLANG_WRONG, "w.slang", {1: (-2.5, 0.0, "finite differences")})

    def run(*values):
        out = "type: float\n" + "".join(f"{v:f}\n" for v in values)
        return {"rc": 0, "stdout": out, "stderr": ""}, conformance.compare(case.checks, out)

    result, reason = run(1.0, -2.5, 3.0)
    assert conformance.verdict("w.slang", case, reason, result)[0] == "known"
    result, reason = run(1.0, -2.0, 3.0)  # not the finite-difference value
    assert conformance.verdict("w.slang", case, reason, result)[0] == "fail"
    result, reason = run(1.0, -2.5, 4.0)  # another value differs too
    assert conformance.verdict("w.slang", case, reason, result)[0] == "fail"
    result, reason = run(1.0, 0.0, 3.0)  # Slang's numbers after all
    assert conformance.verdict("w.slang", case, reason, result)[0] == "fail"
    assert conformance.verdict("other.slang", case, None, result) == ("pass", None)
