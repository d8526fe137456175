"""8-, 16- and 64-bit integers (int8_t ... uint64_t): C's wrap-around arithmetic, signed and
unsigned comparisons and division, conversions, literals, buffers, and loop counters that reverse
mode differentiates through."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, run

KERNEL = """\
//TEST_INPUT: set inp = ubuffer(data=[-3 7 200], stride=4)
RWStructuredBuffer<int> inp;
//TEST_INPUT: set small = out ubuffer(data=[1 -2 300 0], stride=4)
RWStructuredBuffer<int16_t> small;
//TEST_INPUT: set big = out ubuffer(data=[5000000000 0], stride=4)
RWStructuredBuffer<int64_t> big;
//TEST_INPUT: set out = out ubuffer(count=16, stride=4)
RWStructuredBuffer<float> out;

[numthreads(1, 1, 1)]
void computeMain()
{
    int a = inp[0];
    int8_t b = int8_t(inp[2]);
    uint8_t c = uint8_t(a);
    int8_t m = 127; m += int8_t(1);
    uint16_t u = uint16_t(0) - uint16_t(1);
    int64_t w = int64_t(3000000000u) * 3l;
    uint64_t s = 1ul << 40;
    out[0] = float(b);
    out[1] = float(c);
    out[2] = float(m);
    out[3] = float(u);
    out[4] = float(w);
    out[5] = float(s >> 38);
    out[6] = (u > uint16_t(1)) ? 1.0 : 0.0;
    out[7] = (b < int8_t(0)) ? 1.0 : 0.0;
    out[8] = float(int16_t(-2.7));
    out[9] = float(uint8_t(300));
    out[10] = float(int16_t(-7) / int16_t(2));
    out[11] = float(uint16_t(65535) / uint16_t(2));
    out[12] = float(int(w % 7l));
    int16_t2 v = int16_t2(int16_t(3), int16_t(-4));
    out[13] = float(v.x * v.y);
    small[3] = small[0] + small[1] * small[2];
    big[1] = big[0] * 2 + int64_t(a);
    out[14] = float(small[3]);
    out[15] = float(big[1] > 10000000000l);
}
"""


def _kernel_expected():
    """What C's fixed-width integers give, computed by numpy's."""
    a = np.int32(-3)
    b = np.array([200]).astype(np.int8)[0]
    c = np.array([a]).astype(np.uint8)[0]
    m = np.array([128]).astype(np.int8)[0]
    u = np.array([-1]).astype(np.uint16)[0]
    w = np.int64(3000000000) * np.int64(3)
    s = np.uint64(1) << np.uint64(40)
    small = np.array([1, -2, 300], np.int16)
    small3 = np.int16(small[0] + small[1] * small[2])
    big1 = np.int64(5000000000) * 2 + np.int64(a)
    out = [b, c, m, u, np.float32(w), s >> np.uint64(38), u > 1, b < 0, -2, np.uint8(300 % 256),
           int(-7 / 2), 65535 // 2, w % 7, 3 * -4, small3, big1 > 10000000000]
    return [1, -2, 300, int(small3)], [5000000000, int(big1)], [float(x) for x in out]


def test_integer_widths_compute_as_c_does_on_opencl(tmp_path):
    f = tmp_path / "k.slang"
    f.write_text(KERNEL)
    r = subprocess.run([sys.executable, "-m", "diffc.cli", "run", "--slang-output", str(f)], capture_output=True, text=True,
                       env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300)
    assert r.returncode == 0, r.stderr
    sections = [s.split() for s in r.stdout.split("type:")[1:]]
    assert [s[0] for s in sections] == ["int", "int", "float"]
    small, big, out = _kernel_expected()
    assert [int(x) for x in sections[0][1:]] == small
    assert [int(x) for x in sections[1][1:]] == big
    np.testing.assert_allclose([float(x) for x in sections[2][1:]], out, rtol=1e-6)


def test_widths_in_the_interpreter_wrap_and_compare_by_signedness():
    src = """
    int f(int x) {
        uint8_t a = uint8_t(x);          // low 8 bits
        int8_t b = int8_t(a);            // the same bits, signed
        uint16_t c = uint16_t(b);        // sign-extended, then unsigned
        int64_t d = int64_t(c) * 100000;
        return int(d / 1000l) + (c > uint16_t(60000) ? 1 : 0) + (b < int8_t(0) ? 10 : 0);
    }
    """
    for x in (3, 130, 255, 256 + 7, -1):
        a = np.array([x]).astype(np.uint8)[0]
        b = np.array([a]).astype(np.int8)[0]
        c = np.array([b]).astype(np.uint16)[0]
        d = np.int64(c) * 100000
        want = int(d // 1000) + (1 if c > 60000 else 0) + (10 if b < 0 else 0)
        (got,) = run(src, "f", x)
        assert got == want, x


LOOPS = """
[Differentiable]
float counted(float x) {
    float r = 0.0;
    for (int16_t i = 0; i < 5; i++) r += x * float(i);
    for (uint8_t j = uint8_t(250); j < uint8_t(253); j++) r = r * x + float(j) * 0.001;
    for (int64_t k = 6l; k > 2l; k -= 2l) r += sin(x * float(k));
    return r;
}

[Differentiable]
float runtime(float x, no_diff int start) {
    float r = 1.0;
    [MaxIters(6)]
    for (uint16_t i = uint16_t(start); i < uint16_t(start + 3); ++i) r = r * x + float(int(i));
    [MaxIters(6)]
    for (int64_t k = int64_t(start); k < int64_t(start) + 2; k++) r += x * x * float(k);
    return r;
}
"""


def test_loop_counters_of_every_width_differentiate_in_both_modes():
    Compiled(LOOPS, "counted").check_derivatives([0.7])
    Compiled(LOOPS, "runtime").check_derivatives([0.6, 4])


def test_a_narrow_counter_that_wraps_is_not_a_bounded_loop():
    # int8_t reaches 127 and wraps, so `i <= 127` never ends: reverse mode needs a bound
    src = ("[Differentiable]\nfloat f(float x) {\n  float r = x;\n"
           "  for (int8_t i = 0; i <= 127; i++) r = r * 0.5;\n  return r;\n}\n"
           "void g() { var p = diffPair(1.0, 0.0); bwd_diff(f)(p, 1.0); }\n")
    expect_error(src, "E0007", 4, 3, "'for' loop")


def test_literals_take_64_bits_by_suffix_or_size():
    src = """
    int64_t big() { return 5000000000; }
    uint64_t ubig() { return 18446744073709551615ul; }
    int64_t neg() { return -1l * 4294967296; }
    """
    assert run(src, "big") == (5000000000,)
    assert run(src, "ubig")[0] % 2**64 == 2**64 - 1
    assert run(src, "neg") == (-4294967296,)


def test_overloads_rank_the_widths():
    src = """
    float pick(int x) { return 1.0; }
    float pick(int64_t x) { return 2.0; }
    float pick(float x) { return 3.0; }
    float a(int16_t v) { return pick(v); }
    float b(uint64_t v) { return pick(v); }
    """
    assert run(src, "a", 3) == (1.0,)
    assert run(src, "b", 3) == (2.0,)


@pytest.mark.parametrize("src,code,col,words", [
    ("void f(Atomic<int64_t>* p) { p.add(1l); }", "E0008", 30, "atomic operations on int64_t"),
    ("int64_t f() { return 99999999999999999999; }", "E0001", 22, "too large to be represented in any integer type"),
])
def test_width_errors_are_located(src, code, col, words):
    expect_error(src, code, 1, col, words)
