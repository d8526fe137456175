"""Captured steps: a sequence of entry-point dispatches recorded once and replayed as it is.

    with diffc.capture() as step:          # the dispatches run once, and are recorded
        m.learnGradient.dispatch(thread_count=n, network=net, lossBuffer=loss, inputs=x, count=n)
        m.adjustParameters.dispatch(thread_count=p, params=params, gradients=grads, count=p)
    for _ in range(steps):
        step()                             # the same kernels, arguments and sizes, enqueued again

A dispatch that repeats an earlier one is already replayed (runtime/dispatch_plan.py), but it
still compares every argument with the last call's, which is most of a training step's Python
time. A captured step skips that comparison: like a CUDA graph, it runs the kernels on the
tensors it was given, reading whatever they hold when it runs. It keeps those tensors alive (their
device memory cannot go back to the pool and be handed to another tensor while the step may
still write it). Checks stay as the dispatch chose them: bounds and status flags are read back
and raised as a dispatch's would be (deferred_checks=True: every few launches).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

# the captures being recorded (innermost last): dispatch() appends its plans to each
RECORDING: list[Step] = []


class Step:
    """The dispatches recorded by one `capture()`; calling it enqueues them again, in order, and
    returns the last one's event."""

    def __init__(self) -> None:
        self.plans: list = []
        self.kept: list = []  # the tensors the recorded dispatches were given
        self.closed = False

    def record(self, plan, kwargs: dict) -> None:
        if plan.kernel.uninit is not None:  # its shadows are bound per dispatch
            raise RuntimeError(f"diffc.capture: {plan.fn.name}.dispatch runs under the sanitizer (check=True), "
                               "whose uninitialized-read shadows are bound per dispatch: it cannot be captured")
        self.plans.append(plan)
        _tensors(kwargs, self.kept)

    def __call__(self):
        if not self.closed:
            raise RuntimeError("diffc.capture: a step cannot be replayed while it is being recorded")
        event = None
        for plan in self.plans:
            event = plan.run()
        return event

    def __len__(self) -> int:
        return len(self.plans)

    def __repr__(self) -> str:
        names = ", ".join(p.fn.name for p in self.plans)
        return f"<diffc captured step: {len(self.plans)} dispatches ({names})>"


@contextlib.contextmanager
def capture():
    """Records the entry-point dispatches made inside the block (which run as usual) into a
    Step that replays them."""
    step = Step()
    RECORDING.append(step)
    try:
        yield step
    finally:
        RECORDING.remove(step)
        step.closed = True


def _tensors(value, out: list) -> None:
    from diffc.runtime.tensor import Tensor, TensorPointer

    if isinstance(value, Tensor):
        out.append(value)
    elif isinstance(value, TensorPointer):
        out.append(value.tensor)
    elif isinstance(value, Mapping):
        for v in value.values():
            _tensors(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
