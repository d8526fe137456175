"""A launch's error that no synchronizing point raised (a dispatch that writes past a tensor's end,
then no read) is reported when the process ends (runtime/pending.py): a warning on stderr naming
the launch; the `diffc` command, whose process it is, then exits with 1."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

KERNEL = """
[shader("compute")]
[numthreads(8, 1, 1)]
void fill(uint3 tid : SV_DispatchThreadID, RWStructuredBuffer<float> dst) {
    dst[tid.x] = 1.0;
}
"""


def _script(tmp_path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "fill.slang").write_text(KERNEL)
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""\
        import sys
        import numpy as np
        import diffc
        m = diffc.load_module(sys.argv[1])
        short = diffc.Tensor.zeros(4, np.float32)
        fits = diffc.Tensor.zeros(8, np.float32)
        """) + textwrap.dedent(body))
    env = {**os.environ, "DIFFC_DEVICE": "cpu", "DIFFC_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, str(script), str(tmp_path / "fill.slang")], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.mark.parametrize("deferred", [False, True])
def test_an_unread_error_is_a_warning_at_exit(tmp_path, deferred):
    r = _script(tmp_path, f"""\
        m.fill.dispatch(thread_count=8, dst=short, deferred_checks={deferred})
        print("script done")
        """)
    assert r.stdout == "script done\n"
    assert r.returncode == 0, r.stderr  # the process is the script's: its exit status is its own
    assert "warning: a launch's error was never raised" in r.stderr
    assert "fill.slang:5:5: error[E0011]" in r.stderr and "kernel 'fill' would store to buffer 'dst'" in r.stderr
    assert "outside its 4 elements" in r.stderr and "Traceback" not in r.stderr


def test_an_error_raised_once_is_not_reported_again(tmp_path):
    r = _script(tmp_path, """\
        m.fill.dispatch(thread_count=8, dst=short)
        try:
            diffc.synchronize()
        except Exception as e:
            print("raised:", "outside its 4 elements" in str(e))
        """)
    assert r.returncode == 0 and r.stdout == "raised: True\n"
    assert r.stderr == ""


def test_clean_launches_leave_no_warning(tmp_path):
    r = _script(tmp_path, """\
        for _ in range(3):
            m.fill.dispatch(thread_count=8, dst=fits)
        """)
    assert r.returncode == 0 and r.stderr == ""


def test_the_diffc_command_exits_with_1_on_an_unread_error(tmp_path):
    """The diffc command's process is diffc's: an error it leaves unread fails it (here a
    launch before the command runs in the same process stands for one of its own)."""
    r = _script(tmp_path, """\
        m.fill.dispatch(thread_count=8, dst=short)
        from diffc import cli
        sys.exit(cli.main(["version"]))
        """)
    assert r.returncode == 1, r.stderr
    assert r.stdout.strip()  # the version was printed: the command itself did its work
    assert r.stderr.count("warning: a launch's error was never raised") == 1  # not again at exit
    assert "kernel 'fill' would store to buffer 'dst'" in r.stderr
