"""Runs a folder of Slang test files the way Slang's own runner reads them: `diffc suite DIR`.

A file is a value test when it has an active `//TEST(...):COMPARE_COMPUTE...` or
`//TEST:INTERPRET` line and expected values: `NAME.slang.expected.txt` (a `type:` line, then one
value per line), or `CHECK:`/`CHECK-NEXT:` lines of the prefix its test line names
(`filecheck-buffer=P`, `filecheck=P`). Compute tests run as `diffc run FILE`, its data read as
Slang's runner reads them (`--slang-data`); INTERPRET tests run their printf `main` (a test
line's `-entry NAME` names the entry of either). Values compare
numerically (1e-3 relative or 1e-4 absolute), in order, with FileCheck's scanning: `CHECK` finds
the next line that matches, `CHECK-NEXT` must be the next line, `CHECK-NOT` must not appear before
the next match.

Each file runs in a worker process (a crash or a hang costs that file, not the run); workers read
file paths on stdin and answer one JSON line each.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REL_TOL = 1e-3
ABS_TOL = 1e-4
_ACTIVE = re.compile(r"^//TEST(?:\([^)]*\))?:(COMPARE_COMPUTE\w*|INTERPRET)(\([^)]*\))?", re.M)
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)$", re.I)


@dataclass
class Case:
    path: Path
    kind: str  # "compute" | "interpret"
    checks: list[tuple[str, str]]  # (directive, pattern): CHECK, CHECK-NEXT, CHECK-NOT
    groups: str | None = None  # the test line's `-compute-dispatch X,Y,Z` (work-groups), if any
    entry: str | None = None  # the test line's `-entry NAME`, if any
    made_from: Path | None = None  # the Slang test this case is a changed copy of (one_group)

    @property
    def run_args(self) -> list[str]:
        """The arguments of `diffc run` for this file."""
        return (["--slang-output", "--slang-data"] + (["--groups", self.groups] if self.groups else [])
                + (["--entry", self.entry] if self.entry else []) + [str(self.path)])


def _prefix(options: str | None) -> str:
    m = re.search(r"filecheck(?:-buffer)?=(\w+)", options or "")
    return m.group(1) if m else "CHECK"


def _check_lines(text: str, prefix: str) -> list[tuple[str, str]]:
    out = []
    for m in re.finditer(rf"{re.escape(prefix)}(-NEXT|-NOT|-DAG|-SAME|-LABEL)?:[ \t]*(.*)", text):
        pattern = re.sub(r"\s*\*/\s*$", "", m.group(2)).strip()
        out.append((prefix + (m.group(1) or ""), pattern))
    return out


def case_of(path: Path) -> Case | None:
    """The file's value test, or None when it has none (compile-only, disabled, no values)."""
    text = path.read_text(errors="replace")
    m = _ACTIVE.search(text)
    if not m:
        return None
    kind = "interpret" if m.group(1) == "INTERPRET" else "compute"
    line = text[m.start():].split("\n", 1)[0]
    d = re.search(r"-compute-dispatch\s+(\d+)\s*,\s*(\d+)\s*,\s*(\d+)", line)
    groups = ",".join(d.groups()) if d else None
    named = re.search(r"(?:^|\s)-entry\s+(\w+)", line[m.end() - m.start():])
    entry = named.group(1) if named else None
    expected = Path(str(path) + ".expected.txt")
    if "filecheck" not in (m.group(2) or "") and expected.is_file():  # else the file's CHECK lines
        lines = [ln.strip() for ln in expected.read_text().splitlines() if ln.strip()]
        return Case(path, kind, [("CHECK-NEXT" if k else "CHECK", ln) for k, ln in enumerate(lines)], groups, entry)
    checks = _check_lines(text, _prefix(m.group(2)))
    return Case(path, kind, checks, groups, entry) if checks else None


def discover(root: Path) -> list[Case]:
    cases = []
    for p in sorted(root.rglob("*.slang")):
        c = case_of(p)
        if c is not None:
            cases.append(c)
    return cases


# --- files whose expected numbers diffc does not print, on purpose (docs/frontend.md) ---------

# Where Slang's expected numbers are wrong, finite differences decide: relative path -> {index of
# a value (after the `type:` line): (diffc's value, Slang's value, why)}.
SLANG_WRONG: dict[str, dict[int, tuple[float, float, str]]] = {
    "autodiff/treat-as-differentiable-fwd-primal.slang": {
        # d/dx 10 / square(x) at x = 2, where square has only a custom backward derivative:
        # Slang's fwd_diff gives that call a zero derivative, diffc differentiates its body
        7: (-20.0 / 2.0**3, 0.0, "fwd_diff through a function with only a custom bwd derivative"),
        # the tangent of a value overwritten by a constant is zero; Slang builds that zero with
        # the struct's dzero(), which this file makes return 42
        14: (0.0, 42.0, "a zero derivative is zero, not the struct's dzero()"),
    },
}

# Files whose expected numbers rest on a race between work-groups: group 0's work-items read,
# after a group barrier, sums that the other groups may still be adding (a group barrier does not
# wait for other groups; on a GPU they have usually finished). They run with all their
# work-items in one group (one_group), where the barrier orders every addition before the reads.
RACY = {"autodiff/was/warped-sampling-1d.slang"}

_NUMTHREADS = re.compile(r"\[\s*numthreads\s*\(\s*(\d+)\s*,\s*1\s*,\s*1\s*\)\s*\]")
_GROUP_IDS = re.compile(r"SV_Group(ID|ThreadID|Index)\b")


def one_group(case: Case, folder: Path) -> Case | None:
    """A copy of the case (written into `folder`) that runs its X * G work-items, numthreads(X)
    over -compute-dispatch G,1,1, as one group of X * G: the same dispatch-thread ids, and a
    group barrier that spans them all. None where that would change what the program computes:
    not one-dimensional, or it reads group ids (SV_GroupID, SV_GroupThreadID, SV_GroupIndex)."""
    text = case.path.read_text(errors="replace")
    sizes = _NUMTHREADS.findall(text)
    g = [int(v) for v in (case.groups or "1,1,1").split(",")]
    if len(sizes) != 1 or g[1:] != [1, 1] or _GROUP_IDS.search(text):
        return None
    copy = folder / case.path.name
    changed = _NUMTHREADS.sub(f"[numthreads({int(sizes[0]) * g[0]}, 1, 1)]", text)
    if not copy.is_file() or copy.read_text(errors="replace") != changed:
        from diffc.runtime.program import _write_atomically  # (another suite may be reading it)

        _write_atomically(copy, changed.encode())
    return Case(copy, case.kind, case.checks, None, case.entry, made_from=case.path)


def known_difference(rel: str, result: dict, checks: list[tuple[str, str]]) -> str | None:
    """For a SLANG_WRONG file: None when diffc printed Slang's numbers except at the listed
    values, which hold the finite-difference answers; else why not."""
    if result["rc"] != 0:
        return _first_error(result["stderr"])
    head, *values = result["stdout"].splitlines()
    patched = list(values)
    for k, (ours, slangs, why) in SLANG_WRONG[rel].items():
        if k >= len(values) or not _NUMBER.match(values[k].strip()) or not _close(float(values[k]), ours):
            got = values[k].strip() if k < len(values) else "end of output"
            return f"value {k} is '{got}', not {ours:g} ({why})"
        patched[k] = f"{slangs:f}"
    return compare(checks, "\n".join([head] + patched))


def verdict(rel: str, case: Case, reason: str | None, result: dict) -> tuple[str, str | None]:
    """("pass", None), ("known", why diffc differs from Slang there) or ("fail", why)."""
    if rel in SLANG_WRONG:
        if reason is None:
            return "fail", "prints Slang's numbers now: drop it from SLANG_WRONG"
        bad = known_difference(rel, result, case.checks)
        if bad is not None:
            return "fail", bad
        return "known", "Slang's numbers are wrong where finite differences decide: " + "; ".join(
            f"value {k}: {ours:g}, not {slangs:g} ({why})" for k, (ours, slangs, why) in SLANG_WRONG[rel].items())
    if rel in RACY:
        if case.made_from is None:
            return "fail", "racy between work-groups, and its work-items cannot run as one group"
        if reason is not None:
            return "fail", f"with its work-items in one group: {reason}"
        return "known", "racy between work-groups; with all its work-items in one group it prints Slang's numbers"
    return ("pass", None) if reason is None else ("fail", reason)


def _close(a: float, b: float) -> bool:
    if a != a or b != b:
        return a != a and b != b
    return abs(a - b) <= ABS_TOL or abs(a - b) <= REL_TOL * max(abs(a), abs(b))


def line_matches(pattern: str, line: str) -> bool:
    """A numeric pattern matches a line holding that number (within tolerance); any other
    pattern is a substring, as in FileCheck, where `{{re}}` parts are regular expressions."""
    p, s = pattern.strip(), line.strip()
    if "{{" in p:
        parts = re.split(r"\{\{(.*?)\}\}", p)  # literal, regex, literal, ...
        return re.search("".join(x if k % 2 else re.escape(x) for k, x in enumerate(parts)), line) is not None
    if _NUMBER.match(p):
        if not _NUMBER.match(s):
            return False
        return _close(float(p), float(s))
    return p in line


def compare(checks: list[tuple[str, str]], output: str) -> str | None:
    """None when the output satisfies the checks, else why not."""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    pos = 0
    nots: list[str] = []
    for directive, pattern in checks:
        if directive.endswith("-NOT"):
            nots.append(pattern)
            continue
        if directive.endswith("-NEXT") and pos > 0 or directive.endswith("-SAME"):
            start = pos - 1 if directive.endswith("-SAME") else pos
            if start >= len(lines) or not line_matches(pattern, lines[start]):
                got = lines[start] if start < len(lines) else "end of output"
                return f"expected '{pattern}', got '{got.strip()}' (output line {start + 1})"
            pos = start + 1
            continue
        hit = next((k for k in range(pos, len(lines)) if line_matches(pattern, lines[k])), None)
        if hit is None:
            got = lines[pos].strip() if pos < len(lines) else "end of output"
            return f"expected '{pattern}', got '{got}' (output line {pos + 1})"
        for bad in nots:
            for k in range(pos, hit):
                if bad in lines[k]:
                    return f"'{bad}' appears (output line {k + 1}) where it must not"
        nots = []
        pos = hit + 1
    return None


# --- the worker: one file at a time, its output captured at the file-descriptor level --------

def _run_one(args: list[str], run: Callable[[list[str]], int]) -> dict:
    with tempfile.TemporaryFile(mode="w+b") as out, tempfile.TemporaryFile(mode="w+b") as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                rc = run(args)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except BaseException as e:  # a traceback is a failure of its own kind
                import traceback

                traceback.print_exc()
                rc = f"traceback: {type(e).__name__}: {e}"
            sys.stdout.flush()
            sys.stderr.flush()
            from diffc.cli_run import _flush_c_stdout

            _flush_c_stdout()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return {"rc": rc, "stdout": out.read().decode(errors="replace"), "stderr": err.read().decode(errors="replace")}


def worker(run: Callable[[list[str]], int]) -> None:
    """Answers each JSON list of `diffc run` arguments read from stdin with `run(args)`'s exit
    code and output, as JSON."""
    reply = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        if line.strip():
            reply.write(json.dumps(_run_one(json.loads(line), run)) + "\n")
            reply.flush()


class _Worker:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "diffc.cli", "suite", "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )

    def run(self, args: list[str], timeout: float) -> dict:
        import selectors

        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            self.kill()
            return {"rc": "timeout", "stdout": "", "stderr": f"no answer in {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            return {"rc": f"crash (exit {code})", "stdout": "", "stderr": "the worker process died"}
        return json.loads(line)

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def alive(self) -> bool:
        return self.proc.poll() is None


def _first_error(stderr: str) -> str:
    for ln in stderr.splitlines():
        if "error" in ln:
            return ln.strip()
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no output"


def judge(case: Case, result: dict) -> str | None:
    """None when the case passed, else a one-line reason."""
    rc = result["rc"]
    if isinstance(rc, str):
        return f"{rc}: {_first_error(result['stderr'])}"
    if rc != 0:
        return _first_error(result["stderr"])
    return compare(case.checks, result["stdout"])


def racy_in_one_group(cases: list[Case], root: Path, folder: Path) -> list[Case]:
    """The cases, each RACY one replaced by its one-group copy (written into `folder`) where it
    has one."""
    out = []
    for c in cases:
        folded = one_group(c, folder) if str(c.path.relative_to(root)) in RACY else None
        out.append(folded or c)
    return out


def run_suite(cases: list[Case], jobs: int, timeout: float, progress=None, on_result=None) -> dict[Path, str | None]:
    """Every case in `jobs` workers; {path: None (passed) or the reason it failed}.
    `progress(case, reason)` and `on_result(case, reason, raw)` (raw: rc, stdout, stderr) are
    called as each file finishes."""
    import threading

    results: dict[Path, str | None] = {}
    todo = list(cases)
    lock = threading.Lock()

    def loop():
        w = _Worker()
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    case = todo.pop(0)
                if not w.alive():
                    w = _Worker()
                raw = w.run(case.run_args, timeout)
                res = judge(case, raw)
                with lock:
                    results[case.made_from or case.path] = res
                    if progress:
                        progress(case, res)
                    if on_result:
                        on_result(case, res, raw)
        finally:
            if w.alive():
                w.proc.stdin.close()
                w.proc.wait()

    threads = [threading.Thread(target=loop) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@contextlib.contextmanager
def _copies_folder(root: Path) -> Iterator[Path]:
    """Where the suite writes its changed copies of files (one_group): a folder of diffc's cache
    for this root, so that a copy is the same file from run to run and its run comes from the
    module cache; a temporary folder when the cache is off."""
    import hashlib

    from diffc.runtime.module_cache import folder as cache_folder

    base = cache_folder()
    if base is None:
        with tempfile.TemporaryDirectory() as tmp:
            yield Path(tmp)
        return
    where = base.parent / "suite-copies" / hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError:
        with tempfile.TemporaryDirectory() as tmp:
            yield Path(tmp)
        return
    yield where


def main(argv: list[str], run: Callable[[list[str]], int]) -> int:
    """`diffc suite ...`; `run(args)` is `diffc run ARGS...` (the worker's job: the command line
    passes it in, so this module does not import the command line back)."""
    import argparse

    if argv == ["--worker"]:
        worker(run)
        return 0

    ap = argparse.ArgumentParser(prog="diffc suite", description="run a folder of Slang tests as Slang's runner does")
    ap.add_argument("folder")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per file")
    ap.add_argument("--passing", help="write the relative paths of the passing files here")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line for every file, passed or not")
    args = ap.parse_args(argv)
    root = Path(args.folder)
    if not root.is_dir():
        print(f"error: no such folder '{args.folder}'", file=sys.stderr)
        return 1
    start = time.time()
    verdicts: dict[str, tuple[str, str | None]] = {}

    def on_result(case, res, raw):
        rel = str((case.made_from or case.path).relative_to(root))
        verdicts[rel] = kind, why = verdict(rel, case, res, raw)
        if kind != "pass":
            print(f"{'FAIL' if kind == 'fail' else 'KNOWN'} {rel}: {why}", flush=True)
        elif args.verbose:
            print(f"ok   {rel}", flush=True)

    with _copies_folder(root) as folder:
        cases = racy_in_one_group(discover(root), root, folder)
        run_suite(cases, args.jobs, args.timeout, on_result=on_result)
    passed = sorted(rel for rel, (kind, _) in verdicts.items() if kind == "pass")
    known = sum(1 for kind, _ in verdicts.values() if kind == "known")
    if args.passing:
        header = (f"# Files of {root.name}/ that print Slang's expected values ({len(passed)}/{len(cases)}).\n"
                  "# Made by: diffc suite SLANG_TESTS_DIR --passing THIS_FILE\n")
        Path(args.passing).write_text(header + "".join(p + "\n" for p in passed))
    print(f"{len(passed)}/{len(cases)} passed, {known} known differences from Slang "
          f"(KNOWN lines; docs/frontend.md) ({time.time() - start:.0f} s)")
    return 0 if len(passed) + known == len(cases) else 1

