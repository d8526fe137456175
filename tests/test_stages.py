"""diffc/stages.py: a compile longer than a second says which stage it is in, on a terminal only."""

import io
import time

from diffc import stages


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_long_stage_is_shown_then_erased(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(stages, "AFTER_S", 0.05)
    monkeypatch.delenv("DIFFC_PROGRESS", raising=False)
    with stages.stage("compiling"):
        with stages.stage("differentiating"):
            time.sleep(0.3)
        with stages.stage("emitting OpenCL"):
            pass
    text = err.getvalue()
    assert "diffc: differentiating (0 s)" in text
    assert "diffc: emitting OpenCL" in text  # shown as soon as it starts: the compile is already long
    assert text.endswith("\r\x1b[K")  # the line is erased at the end
    assert "\n" not in text


def test_a_short_compile_prints_nothing(monkeypatch):
    err = Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.delenv("DIFFC_PROGRESS", raising=False)
    with stages.stage("compiling"):
        pass
    time.sleep(0.05)
    assert err.getvalue() == ""


def test_not_a_terminal_or_turned_off_prints_nothing(monkeypatch):
    monkeypatch.setattr(stages, "AFTER_S", 0.01)
    for err, env in ((io.StringIO(), ""), (Terminal(), "0")):
        monkeypatch.setattr("sys.stderr", err)
        monkeypatch.setenv("DIFFC_PROGRESS", env)
        with stages.stage("compiling"):
            time.sleep(0.1)
        assert err.getvalue() == ""
