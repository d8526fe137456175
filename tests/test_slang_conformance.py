"""Slang's own autodiff test suites (../shared/slang-tests, never copied here) through
`diffc suite`'s runner: every file in slang_conformance_passing.txt must print Slang's expected
values, and every other value test must fail with a located error, never a traceback, a crash or
a wrong number. DIFFC_SLANG_TESTS names another copy of the suites."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from diffc import conformance

ROOT = Path(os.environ.get("DIFFC_SLANG_TESTS", Path(__file__).resolve().parents[2] / "shared" / "slang-tests"))
PASSING = Path(__file__).with_name("slang_conformance_passing.txt")
LOCATED = re.compile(r"^\S+\.slang:\d+:\d+: error(\[[\w-]+\])?: ")

# Files whose numbers differ from Slang's on purpose, because finite differences decide
# (docs/frontend.md):
# output line -> (what diffc prints, what Slang prints, why).
DELIBERATE = {
    "autodiff/treat-as-differentiable-fwd-primal.slang": {
        # d/dx 10 / square(x) at x = 2, where square has only a custom backward derivative:
        # Slang's fwd_diff gives that call a zero derivative, diffc differentiates its body
        7: (-20.0 / 2.0**3, 0.0, "fwd_diff through a function with only a custom bwd derivative"),
        # the tangent of a value overwritten by a constant is zero; Slang builds that zero with
        # the struct's dzero(), which this file makes return 42
        14: (0.0, 42.0, "a zero derivative is zero, not the struct's dzero()"),
    },
}

# Files whose expected values rest on a race between work-groups: they must run, their numbers
# are not compared (docs/frontend.md, "Conformance").
RACY = {
    # group 0's work-items read, after a group barrier, sums that the other groups may still be
    # adding (a group barrier does not wait for other groups); on a GPU they have usually finished
    "autodiff/was/warped-sampling-1d.slang",
}

pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason=f"Slang's test suites are not at {ROOT}")


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[str | None, dict]]:
    cases = conformance.discover(ROOT)
    raw: dict[str, tuple[str | None, dict]] = {}

    def keep(case, res, result):
        raw[str(case.path.relative_to(ROOT))] = (res, result)

    conformance.run_suite(cases, jobs=os.cpu_count() or 1, timeout=120.0, progress=None, on_result=keep)
    return raw


def _expected_passing() -> list[str]:
    return [ln.strip() for ln in PASSING.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def test_listed_files_pass(results):
    failed = [f"{name}: {results[name][0]}" for name in _expected_passing() if name not in results or results[name][0]]
    passed = sum(1 for r, _ in results.values() if r is None)
    print(f"\nSlang conformance: {passed}/{len(results)}")
    assert not failed, "files that passed before fail now:\n" + "\n".join(failed)


def test_other_files_fail_with_a_located_error(results):
    listed = set(_expected_passing())
    bad = []
    for name, (reason, result) in sorted(results.items()):
        if reason is None or name in listed or name in DELIBERATE or name in RACY:
            continue
        first = next((ln for ln in result["stderr"].splitlines() if "error" in ln), "")
        if result["rc"] != 1 or not LOCATED.match(first) or "Traceback" in result["stderr"]:
            bad.append(f"{name}: {reason}")
    assert not bad, "files that fail without a located error (a wrong number, a traceback or a crash):\n" + "\n".join(bad)


@pytest.mark.parametrize("name", sorted(DELIBERATE))
def test_deliberate_differences_are_exactly_the_documented_ones(results, name):
    """diffc prints the finite-difference answer where Slang differs, and Slang's numbers
    everywhere else in the file."""
    reason, result = results[name]
    assert reason is not None, f"{name} now prints Slang's numbers: drop it from DELIBERATE"
    values = result["stdout"].splitlines()[1:]  # after the "type:" line
    patched = list(values)
    for k, (ours, slangs, why) in DELIBERATE[name].items():
        assert float(values[k]) == pytest.approx(ours, abs=1e-6), why
        patched[k] = f"{slangs:f}"
    case = conformance.case_of(ROOT / name)
    assert conformance.compare(case.checks, "\n".join(result["stdout"].splitlines()[:1] + patched)) is None


@pytest.mark.parametrize("name", sorted(RACY))
def test_racy_files_run_to_the_end(results, name):
    reason, result = results[name]
    assert result["rc"] == 0, result["stderr"]
    values = result["stdout"].splitlines()[1:]
    assert values and all(conformance.line_matches(v, v) for v in values)  # numbers, printed
