"""The runtime's errors: all are `DiffcError`s, so tools print them without a traceback."""

from __future__ import annotations

from diffc.diagnostics import DiffcError, render_error


class RuntimeDiffcError(DiffcError):
    """Something about the device, a program build or a call went wrong."""


class ModuleFileNotFoundError(RuntimeDiffcError, FileNotFoundError):
    """load_module of a path that is no file: a FileNotFoundError as Python's own loaders raise
    (`except FileNotFoundError` catches it), and a DiffcError that tools print as one line."""

    def __init__(self, message: str, path):
        RuntimeDiffcError.__init__(self, message)
        self.filename = str(path)


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


def named_arguments(function: str, names: list[str], args: tuple, kwargs: dict) -> dict:
    """Parameter name -> argument of a call of `function` (parameters `names`), positional ones
    first: a CallError for too many, an unknown name or one given twice. Which missing ones are
    an error (defaults, out parameters) is the caller's to say."""
    if len(args) > len(names):
        raise CallError(f"error: {function}() takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
    values = dict(zip(names, args))
    for key, v in kwargs.items():
        if key not in names:
            raise CallError(f"error: {function}() got an unknown argument '{key}' (parameters: {', '.join(names)})",
                            key)
        if key in values:
            raise CallError(f"error: {function}() got argument '{key}' twice", key)
        values[key] = v
    return values


class UninitializedReadError(CallError):
    """The sanitizer mode: a call would read a gradient buffer that was never written."""


def located_failure(e: Exception, module, what: str) -> RuntimeDiffcError:
    """A pass's failure on `module` as the runtime's error: at the op's source line where the
    pass located it, else naming the module's file."""
    if getattr(e, "location", None) is not None:
        return RuntimeDiffcError(render_error(e, module.sources, prefix=what))
    return RuntimeDiffcError(f"error: {module.path}: {what}{e}")


def with_source_line(emit, sources: dict[str, str]):
    """`emit`, whose located errors (the OpenCL emitter's) also show the source line."""

    def run(*args, **kwargs):
        try:
            return emit(*args, **kwargs)
        except DiffcError as e:
            if getattr(e, "location", None) is not None:
                e.message = render_error(e, sources)
                e.args = (e.message,)
            raise

    return run
