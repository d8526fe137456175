"""SlangPy's command encoders: `func.append_to(encoder, ...)` records a call, the encoder's
`finish()` gives a command buffer, `device.submit_command_buffer(buffer)` runs its calls in the
order they were recorded and returns an id that `device.wait_for_submit(id)` accepts. diffc's
calls finish before they return, so a submitted buffer has run when submit returns."""

from __future__ import annotations

from collections.abc import Callable


class CommandBuffer:
    def __init__(self, calls: list[Callable[[], object]]):
        self.calls = calls

    def run(self) -> None:
        for call in self.calls:
            call()


class CommandEncoder:
    def __init__(self, device=None):
        self.device = device
        self._calls: list[Callable[[], object]] = []
        self._finished = False

    def append(self, call: Callable[[], object]) -> None:
        if self._finished:
            raise RuntimeError("slangpy: this command encoder is finished; create a new one")
        self._calls.append(call)

    def finish(self) -> CommandBuffer:
        self._finished = True
        return CommandBuffer(self._calls)


class Submissions:
    """A device's submitted command buffers, numbered."""

    def __init__(self):
        self.count = 0

    def submit(self, buffer: CommandBuffer) -> int:
        buffer.run()
        self.count += 1
        return self.count

    def wait(self, submission: int) -> None:
        if not 0 < submission <= self.count:
            raise ValueError(f"slangpy: no submission {submission}")
