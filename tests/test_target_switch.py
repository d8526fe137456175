"""`__target_switch` (frontend/features/target_switch.py): diffc's target takes the `default:`
branch (the other branches' target code is never read); a switch without one is a located E0008,
as are inline target code and taking an address. Also generic int arguments written as
expressions (`f<C * C>()`)."""

from __future__ import annotations

import pytest
from slang_helpers import expect_error, run

SRC = """
float pick(float x)
{
    __target_switch
    {
    case cuda:
        __intrinsic_asm "fancy($0)";
    case hlsl:
    case glsl:
        __requirePrelude("#include <x>");
    default:
        if (x > 0.0) { return 2.0 * x; }
        return -x;
    }
}
int scaled<let N : int>() { return N + 1; }
struct Grid<let C : int> { int cells() { return scaled<C * C>() + scaled<(C + 1) * 2 - C>(); } };
int cells() { Grid<3> g; return g.cells(); }
"""


@pytest.mark.parametrize("x,want", [(1.5, 3.0), (-2.0, 2.0)])
def test_the_default_branch_is_taken(x, want):
    assert run(SRC, "pick", x)[0] == pytest.approx(want)


def test_generic_int_arguments_as_expressions():
    assert run(SRC, "cells")[0] == (9 + 1) + (5 + 1)


def test_a_switch_without_default_is_located():
    expect_error("void f()\n{\n    __target_switch\n    {\n    case cuda:\n        __intrinsic_asm \"x\";\n    }\n}",
                 "E0008", 3, 5, "it has cuda")


def test_inline_target_code_is_located():
    expect_error("void f() { __intrinsic_asm \"x\"; }", "E0008", 1, 12, "__intrinsic_asm")


def test_taking_an_address_is_located():
    expect_error("float* f(float* p) { return &p[1]; }", "E0008", 1, 29, "address")
