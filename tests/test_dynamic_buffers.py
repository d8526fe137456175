"""Buffers of interface values (dynamic_buffers.py) in Slang's layout: per element a type id
(2 words), the conformance id (2 words) and the value's words. Run through `diffc run`; the
gradients are compared with central finite differences of the same functions in numpy."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from diffc.cli import main
from slang_harness import compile_error

SRC = """
[anyValueSize(16)]
interface IShape : IDifferentiable { [Differentiable] float eval(float x); }
struct Quad : IShape { float k; int n; [Differentiable] float eval(float x) { return k * x * x + n; } }
struct Wave : IShape { float3 a; [Differentiable] float eval(float x) { return a.x * sin(a.y * x) + a.z; } }
StructuredBuffer<IShape> shapes;
RWStructuredBuffer<float> outputBuffer;
[Differentiable] float f(int i, float x) { IShape s = shapes[i]; return s.eval(x); }
[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    for (int i = 0; i < 3; i++)
    {
        outputBuffer[i] = f(i, 0.8);
        var px = diffPair(0.8);
        bwd_diff(f)(i, px, 1.0);
        outputBuffer[3 + i] = px.d;
        outputBuffer[6 + i] = fwd_diff(f)(i, diffPair(0.8, 1.0)).d;
    }
}
//TEST_INPUT: type_conformance Wave:IShape = 0
//TEST_INPUT: type_conformance Quad:IShape = 7
//TEST_INPUT: set outputBuffer = out ubuffer(data=[0 0 0 0 0 0 0 0 0], stride=4)
"""


def word(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", x))[0]


def element(tag: int, value: list[int]) -> list[int]:
    return [0, 0, tag, 0] + value + [0] * (4 - len(value))


def fd(g, x: float, h: float = 1e-6) -> float:
    return (g(x + h) - g(x - h)) / (2 * h)


def test_elements_dispatch_on_their_conformance_ids_with_derivatives(tmp_path, capsys):
    data = (element(7, [word(1.5), 3])  # Quad{1.5, 3}
            + element(0, [word(2.0), word(0.5), word(-1.0)])  # Wave{(2, 0.5, -1)}
            + element(7, [word(-0.25), -2]))
    path = tmp_path / "shapes.slang"
    path.write_text(SRC + f"//TEST_INPUT: set shapes = ubuffer(data=[{' '.join(map(str, data))}], stride=4)\n")
    assert main(["run", str(path)]) == 0
    out = [float(v) for v in capsys.readouterr().out.split()[2:]]
    gs = [lambda x: 1.5 * x * x + 3, lambda x: 2.0 * np.sin(0.5 * x) - 1.0, lambda x: -0.25 * x * x - 2]
    x = 0.8
    # (printed with 6 decimals)
    assert out[0:3] == pytest.approx([g(x) for g in gs], abs=2e-6)
    assert out[3:6] == pytest.approx([fd(g, x) for g in gs], abs=2e-6)  # reverse mode
    assert out[6:9] == pytest.approx(out[3:6], abs=2e-6)  # forward mode agrees


def test_writing_an_interface_value_into_a_buffer_is_refused():
    src = SRC.replace("StructuredBuffer<IShape> shapes;", "RWStructuredBuffer<IShape> shapes;") + \
        "void put(IShape s) { shapes[0] = s; }\n[numthreads(1, 1, 1)] void copy() { put(shapes[1]); }\n"
    assert "error[E0008]: writing an interface 'IShape' value into memory is not supported" in compile_error(src)


def test_a_value_larger_than_any_value_size_is_refused():
    src = SRC.replace("struct Wave : IShape { float3 a;", "struct Wave : IShape { float3 a; float2 b;")
    assert "error[E0008]: Wave has 20 bytes of fields, more than the [anyValueSize(16)] of interface 'IShape'" \
        in compile_error(src)


def test_fields_that_are_not_32_bit_numbers_are_refused():
    src = SRC.replace("float k; int n;", "double k; int n;")
    assert "error[E0008]: interface 'IShape' values in memory holding Quad, whose fields are not all 32-bit " \
           "numbers, are not supported" in compile_error(src)


POINTER = SRC.replace("StructuredBuffer<IShape> shapes;", "uniform IShape* shapes;")


def test_a_pointer_to_interface_values_reads_the_same_layout(tmp_path, capsys):
    data = element(0, [word(1.0), word(2.0), word(0.5)]) + element(7, [word(0.5), 4]) + element(7, [word(3.0), 0])
    path = tmp_path / "ptr.slang"
    path.write_text(POINTER.replace("IShape s = shapes[i];", "IShape s = (i == 0 ? *shapes : (shapes + 1)[i - 1]);")
                    + f"//TEST_INPUT: set shapes = ubuffer(data=[{' '.join(map(str, data))}], stride=4)\n")
    assert main(["run", str(path)]) == 0
    out = [float(v) for v in capsys.readouterr().out.split()[2:]]
    gs = [lambda x: 1.0 * np.sin(2.0 * x) + 0.5, lambda x: 0.5 * x * x + 4, lambda x: 3.0 * x * x]
    x = 0.8
    assert out[0:3] == pytest.approx([g(x) for g in gs], abs=2e-6)
    assert out[3:6] == pytest.approx([fd(g, x) for g in gs], abs=2e-6)
    assert out[6:9] == pytest.approx(out[3:6], abs=2e-6)


def test_writing_through_a_pointer_to_interface_values_is_refused():
    src = POINTER + "void put(IShape s) { *shapes = s; }\n[numthreads(1, 1, 1)] void copy() { put(shapes[1]); }\n"
    assert "error[E0008]: writing an interface 'IShape' value into memory is not supported" in compile_error(src)


def test_a_field_through_a_pointer_to_interface_values_is_refused():
    src = POINTER + "[numthreads(1, 1, 1)] void tag() { outputBuffer[0] = shapes->__tag; }\n"
    assert "error[E0008]: a field of an interface 'IShape' value in memory is not supported" in compile_error(src)
