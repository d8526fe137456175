"""C text of the warp-aggregated atomic adds of the "ptx" atomics mode (NVIDIA's OpenCL, sm_70+).

When many work-items add into the same few addresses (gradients of shared parameters), the adds
serialise on those addresses. Here the lanes of a warp that add to the same address first sum
their values with shuffles, and only the lowest of them issues one `red` (an atomic add whose old
value is not returned). Divergence is allowed: the helper works on the lanes active when it is
called (`activemask`), groups them by address (`match.any.sync`), and shuffles only among them.

  - a whole warp adding to one address (the common case) sums with a 5-step butterfly;
  - otherwise every active lane walks the (warp-uniform) active mask, reads each lane's value
    with `shfl.sync.idx`, and keeps the values of its peers (lanes with its address).

Halves are summed in float and rounded to half once, by `cvt.rn.f16.f32` (round to nearest
even, as vstore_half), before `red.global.add.noftz.f16`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WarpAddType:
    """How one element type is added: its C pointer and value types, the asm constraint of a
    32-bit value register, and the PTX that adds the sum (%0: the address, %1: the sum)."""

    suffix: str
    pointee: str
    value: str
    constraint: str
    red: str
    zero: str


WARP_ADD_TYPES = {
    "f32": WarpAddType("f32", "float", "float", "f", "red.global.add.f32 [%0], %1;", "0.0f"),
    "f16": WarpAddType(
        "f16", "half", "float", "f",
        "{ .reg .b16 hsum; cvt.rn.f16.f32 hsum, %1; red.global.add.noftz.f16 [%0], hsum; }", "0.0f",
    ),
    "i32": WarpAddType("i32", "int", "int", "r", "red.global.add.s32 [%0], %1;", "0"),
}

_WARP_ADD = """\
static void {name}(volatile __global {pointee}* p, {value} v) {{
    uint active, peers, lower;
    asm volatile("activemask.b32 %0;" : "=r"(active));
    asm volatile("match.any.sync.b64 %0, %1, %2;" : "=r"(peers) : "l"(p), "r"(active));
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lower));
    {value} sum = v;
    if (active == 0xffffffffu && peers == active) {{  /* uniform: every lane's peers are the warp */
        for (uint step = 16u; step != 0u; step >>= 1) {{
            {value} other;
            asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "={c}"(other) : "{c}"(sum), "r"(step));
            sum += other;
        }}
    }} else {{
        sum = {zero};
        for (uint rest = active; rest != 0u; rest &= rest - 1u) {{  /* uniform: same mask in every lane */
            uint lane = 31u - clz(rest & (0u - rest));
            {value} other;
            asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, %3;" : "={c}"(other) : "{c}"(v), "r"(lane), "r"(active));
            if (peers & (1u << lane)) sum += other;
        }}
    }}
    if ((peers & lower) == 0u)  /* the lowest lane of this address adds the sum */
        asm volatile("{red}" : : "l"(p), "{c}"(sum) : "memory");
}}"""


def warp_add(element: str) -> tuple[str, str]:
    """(name, C text) of `void NAME(volatile __global T* p, V v)`: *p += v, aggregated over the
    lanes of the warp that add to the same p. `element` is "f32", "f16" or "i32"."""
    t = WARP_ADD_TYPES[element]
    name = f"diffc_warp_atomic_add_{t.suffix}"
    return name, _WARP_ADD.format(
        name=name, pointee=t.pointee, value=t.value, c=t.constraint, red=t.red, zero=t.zero
    )


HELPER_NAMES = tuple(warp_add(e)[0] for e in WARP_ADD_TYPES)
