"""An int constant used by a struct that is declared before the constant: a struct that an earlier
declaration uses is declared at that use, ahead of the constants after it (as happens across
files whose imports go round in a circle: SlangPy's sdf-match)."""

from __future__ import annotations

import pytest
from slang_helpers import run

SRC = """
struct Model { Layer m; float bias; };
struct Weights<let K : int> { float w[K]; };
struct Layer { Weights<SIZE> ws; };
static const int HALF = 2;
static const int SIZE = 2 * HALF;
float total(float x) { Model m; for (int i = 0; i < SIZE; i++) m.m.ws.w[i] = x * float(i); return m.m.ws.w[SIZE - 1] + float(SIZE); }
"""


def test_the_constant_sizes_the_struct_declared_before_it():
    assert run(SRC, "total", 0.5)[0] == pytest.approx(0.5 * 3 + 4.0)


def test_a_struct_constant_names_an_earlier_one():
    src = """
struct Net { static const int Octaves = 3; static const int Inputs = 2 * Octaves + 1; float w[Inputs]; };
int inputs() { Net n; return Net::Inputs + n.w.getCount(); }
"""
    assert run(src, "inputs")[0] == 14
