"""C text of the helpers behind kernel.atomic_rmw and f16 <-> i16 bitcasts.

Half values live in float registers and in `half` storage (vload_half / vstore_half), so a device
without cl_khr_fp16 runs them. An atomic add on a half cannot use vload_half inside the
compare-and-swap loop (the loop works on the bits of the 32-bit word that holds the half), so
the conversions between half bits and float are done with integer arithmetic here, rounding to
nearest even as vstore_half does.
"""

from __future__ import annotations

HALF_BITS_TO_FLOAT = "diffc_half_bits_to_float"
FLOAT_TO_HALF_BITS = "diffc_float_to_half_bits"

_HALF_BITS_TO_FLOAT = """\
static float diffc_half_bits_to_float(uint h) {
    uint sign = (h & 0x8000u) << 16;
    uint exponent = (h >> 10) & 0x1fu;
    uint mantissa = h & 0x3ffu;
    if (exponent == 0x1fu)  /* infinity or NaN (the payload moves along) */
        return as_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0u)  /* normal: rebias 15 -> 127 */
        return as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    /* zero or subnormal: mantissa * 2^-24, exact in float */
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
}"""

_FLOAT_TO_HALF_BITS = """\
static uint diffc_float_to_half_bits(float f) {
    uint x = as_uint(f);
    uint sign = (x >> 16) & 0x8000u;
    uint a = x & 0x7fffffffu;
    if (a >= 0x7f800000u)  /* infinity, or NaN (kept quiet) */
        return sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u);
    if (a >= 0x477ff000u)  /* 65520 and above round to infinity */
        return sign | 0x7c00u;
    if (a >= 0x38800000u) {  /* a normal half: >= 2^-14 */
        uint h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3ffu);
        uint rest = a & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            h += 1u;  /* a carry out of the mantissa bumps the exponent, as it should */
        return sign | h;
    }
    uint e = a >> 23;
    if (e < 102u)  /* below half the smallest subnormal: zero */
        return sign;
    /* subnormal: the value in units of 2^-24 is m >> (126 - e), rounded to nearest even */
    uint m = (a & 0x7fffffu) | 0x800000u;
    uint shift = 126u - e;
    uint h = m >> shift;
    uint rest = m & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (h & 1u)))
        h += 1u;
    return sign | h;
}"""

# The 32-bit word holding the half at `p`: its address with the low two bits cleared; the half
# is its upper 16 bits when p is 2 mod 4 on a little-endian device.
_HALF_FETCH_ADD = """\
static float {name}(volatile {space} half* p, float v) {{
    uintptr_t address = (uintptr_t)p;
    volatile {space} uint* word = (volatile {space} uint*)(address & ~(uintptr_t)3);
#ifdef __ENDIAN_LITTLE__
    uint shift = (address & 2) ? 16u : 0u;
#else
    uint shift = (address & 2) ? 0u : 16u;
#endif
    uint expected = *word;
    while (true) {{
        float old = diffc_half_bits_to_float((expected >> shift) & 0xffffu);
        uint sum = diffc_float_to_half_bits(old + v);
        uint desired = (expected & ~(0xffffu << shift)) | (sum << shift);
        uint seen = atomic_cmpxchg(word, expected, desired);
        if (seen == expected) return old;
        expected = seen;
    }}
}}"""

_FLOAT_FETCH_ADD = """\
static float {name}(volatile {space} float* p, float v) {{
    volatile {space} uint* bits = (volatile {space} uint*)p;
    uint expected = *bits;
    while (true) {{
        uint seen = atomic_cmpxchg(bits, expected, as_uint(as_float(expected) + v));
        if (seen == expected) return as_float(expected);
        expected = seen;
    }}
}}"""

INT_BUILTINS = {"addi": "atomic_add", "maxs": "atomic_max", "maxu": "atomic_max", "mins": "atomic_min", "minu": "atomic_min"}
UNSIGNED_KINDS = ("maxu", "minu")


def half_conversions() -> dict[str, str]:
    """name -> C text of the two half <-> float bit conversions."""
    return {HALF_BITS_TO_FLOAT: _HALF_BITS_TO_FLOAT, FLOAT_TO_HALF_BITS: _FLOAT_TO_HALF_BITS}


def half_fetch_add(space: str) -> tuple[str, str]:
    """(name, C text) of `float NAME(volatile SPACE half* p, float v)`: adds v to *p, returns
    the old value."""
    name = f"diffc_atomic_fetch_add_half_{space.lstrip('_')}"
    return name, _HALF_FETCH_ADD.format(name=name, space=space)


def float_fetch_add(space: str) -> tuple[str, str]:
    name = f"diffc_atomic_fetch_add_float_{space.lstrip('_')}"
    return name, _FLOAT_FETCH_ADD.format(name=name, space=space)


HELPER_NAMES = (
    HALF_BITS_TO_FLOAT,
    FLOAT_TO_HALF_BITS,
    *(half_fetch_add(s)[0] for s in ("__global", "__local")),
    *(float_fetch_add(s)[0] for s in ("__global", "__local")),
)
