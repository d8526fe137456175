"""`diffc check FILE`: the command line of diffc.gradcheck. Prints one table per function and
exits 1 on a mismatch (or a function that could not be run), 0 when every checked derivative
agrees with finite differences."""

from __future__ import annotations

import argparse
import os
import sys

from diffc.diagnostics import DiffcError, render_error


def _domain(text: str) -> tuple[str | None, tuple[float, float]]:
    """`LO,HI` (every parameter: name None) or `NAME=LO,HI` (one parameter; NAME may be F.P)."""
    name, eq, numbers = text.rpartition("=")
    name = name.strip() if eq else None
    if eq and not all(part.isidentifier() for part in (name or "").split(".")):
        raise argparse.ArgumentTypeError(f"--domain {text}: expected NAME=LO,HI with NAME a parameter's name "
                                         f"(or FUNCTION.PARAMETER), like shininess=1,64")
    try:
        lo, hi = (float(x) for x in numbers.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--domain must be LO,HI like -1,1 or NAME=LO,HI like shininess=1,64; "
                                         f"got '{text}'") from None
    if not lo < hi:
        raise argparse.ArgumentTypeError(f"--domain needs LO < HI; got '{text}'")
    return name, (lo, hi)


def _join_domain(argv: list[str]) -> list[str]:
    """`--domain -2,2` as `--domain=-2,2`: argparse takes a value starting with '-' for an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--domain" and i + 1 < len(argv):
            out.append(f"--domain={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv: list[str]) -> int:
    from diffc import gradcheck

    p = argparse.ArgumentParser(prog="diffc check", description="check a module's derivatives against "
                                "float64 central finite differences of its primal")
    p.add_argument("file")
    p.add_argument("--domain", type=_domain, action="append", default=[], metavar="[NAME=]LO,HI",
                   help="random float inputs are drawn uniformly from LO,HI (default -1,1); NAME=LO,HI gives "
                        "parameter NAME (of every function that has one; FUNCTION.NAME: of that function) its own "
                        "range; repeatable. Where the inputs give non-finite values, positive inputs are tried "
                        "for the parameters without a range of their own")
    p.add_argument("--samples", type=int, default=gradcheck.DEFAULT_SAMPLES, help="inputs per function (default 3)")
    p.add_argument("--tol", type=float, default=gradcheck.DEFAULT_TOL,
                   help="largest accepted |a - b|_inf / max(|b|_inf, 1) (default 1e-5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--function", action="append", default=None, help="check only this function (repeatable)")
    p.add_argument("--device", nargs="?", const="auto", choices=("cpu", "gpu", "auto"), default=None,
                   help="also run the derivatives on the OpenCL device (functions callable over tensors)")
    args = p.parse_args(_join_domain(argv))
    if args.samples < 1:
        p.error("--samples must be at least 1")
    try:
        from diffc.runtime.module import load_module

        if args.device is not None:
            os.environ["DIFFC_DEVICE"] = args.device
        domain = next((r for n, r in reversed(args.domain) if n is None), gradcheck.DEFAULT_DOMAIN)
        domains = {n: r for n, r in args.domain if n is not None}
        module = load_module(args.file)
        report = gradcheck.check(module, domain, args.samples, args.tol, args.seed, args.function,
                                 device=args.device is not None, domains=domains)
    except DiffcError as e:
        sys.stdout.flush()
        print(render_error(e), file=sys.stderr)
        return 1
    except ValueError as e:  # a --domain for no parameter
        print(f"error: --domain: {e}", file=sys.stderr)
        return 1
    print(report.table())
    return 0 if report.ok else 1
