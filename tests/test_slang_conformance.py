"""Slang's own autodiff test suites (../shared/slang-tests, never copied here) through
`diffc suite`'s runner: every file in slang_conformance_passing.txt must print Slang's expected
values, and every other value test must fail with a located error, never a traceback, a crash or
a wrong number. DIFFC_SLANG_TESTS names another copy of the suites."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from diffc import conformance

ROOT = Path(os.environ.get("DIFFC_SLANG_TESTS", Path(__file__).resolve().parents[2] / "shared" / "slang-tests"))
PASSING = Path(__file__).with_name("slang_conformance_passing.txt")
LOCATED = re.compile(r"^\S+\.slang:\d+:\d+: error(\[[\w-]+\])?: ")

# Files whose numbers differ from Slang's on purpose, and racy ones: diffc.conformance's
# SLANG_WRONG and RACY (docs/frontend.md, "Conformance").
DELIBERATE = conformance.SLANG_WRONG
RACY = conformance.RACY

pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason=f"Slang's test suites are not at {ROOT}")


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[str | None, dict, conformance.Case]]:
    raw: dict[str, tuple[str | None, dict, conformance.Case]] = {}

    def keep(case, res, result):
        raw[str((case.made_from or case.path).relative_to(ROOT))] = (res, result, case)

    with tempfile.TemporaryDirectory() as folder:
        cases = conformance.racy_in_one_group(conformance.discover(ROOT), ROOT, Path(folder))
        conformance.run_suite(cases, jobs=os.cpu_count() or 1, timeout=120.0, progress=None, on_result=keep)
    return raw


def _expected_passing() -> list[str]:
    return [ln.strip() for ln in PASSING.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def test_listed_files_pass(results):
    failed = [f"{name}: {results[name][0]}" for name in _expected_passing() if name not in results or results[name][0]]
    passed = sum(1 for r, *_ in results.values() if r is None)
    print(f"\nSlang conformance: {passed}/{len(results)}")
    assert not failed, "files that passed before fail now:\n" + "\n".join(failed)


def test_other_files_fail_with_a_located_error(results):
    listed = set(_expected_passing())
    bad = []
    for name, (reason, result, _) in sorted(results.items()):
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
    reason, result, case = results[name]
    kind, why = conformance.verdict(name, case, reason, result)
    assert kind == "known", why


@pytest.mark.parametrize("name", sorted(RACY))
def test_racy_files_print_slangs_numbers_with_their_work_items_in_one_group(results, name):
    reason, result, case = results[name]
    assert case.made_from is not None, "the racy file was not run as one group"
    kind, why = conformance.verdict(name, case, reason, result)
    assert kind == "known", why
