"""The runtime's errors: all are `DiffcError`s, so tools print them without a traceback."""

from __future__ import annotations

from diffc.diagnostics import DiffcError


class RuntimeDiffcError(DiffcError):
    """Something about the device, a program build or a call went wrong."""


class DeviceError(RuntimeDiffcError):
    """No usable OpenCL device, or DIFFC_DEVICE names none that exists."""


class BuildError(RuntimeDiffcError):
    """The OpenCL compiler rejected a generated program; the message holds its log and the
    generated source lines the log points at."""

    def __init__(self, message: str, log: str = "", source: str = ""):
        super().__init__(message)
        self.log = log
        self.source = source


class CallError(RuntimeDiffcError):
    """A bad call of a module function: unknown or missing argument, shapes that do not
    broadcast, a wrong dtype, a missing `.grad`, bwds of a non-differentiable function."""

    def __init__(self, message: str, argument: str | None = None):
        super().__init__(message)
        self.argument = argument
