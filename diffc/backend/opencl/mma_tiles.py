"""C text of the group's matrix product Y = X * W^T that cooperative-layers' tensor-core path calls
(diffc/kernel_support/cooperative.py, `mma`): X (C x K, row stride ldx), W (M x K) and Y (C x M)
are floats in one local buffer; every work-item of the group calls it between barriers.

"ptx" (NVIDIA's OpenCL, sm_80+): each warp takes 16 x 8 tiles of Y in turn and sums them over k
in steps of 16 with `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: X and W rounded to half
(`cvt.rn.f16x2.f32`, round to nearest even), products and sums in float. Rows past C, columns
past M and k past K read as zeros. Fragment layout (lane = 4g + t): A holds X[s0+g (+8)][k0+2t
(+1, +8, +9)], B holds W[n0+g][k0+2t (+1, +8, +9)], D holds Y[s0+g (+8)][n0+2t (+1)].

Otherwise: plain float sums, each work-item some elements of Y (the same numbers as the float
tiles). The setting is off unless asked for (DIFFC_COOP_MMA=1), and kernel_settings.mma_builds
turns it back off on an NVIDIA OpenCL that does not build this. On an H200 it is correct (one
step within 1.5e-3 of a float64 step's largest update: half inputs) but slower than each
work-item's own products (6.98 against 5.22 ms at 2^18). Not for want of occupancy: 24 KiB
of local memory (16 samples at a time) gave 7.03 ms against 7.05 with 40 KiB. Left to try: W
staged per group and product as floats, every fragment converted to half again as it is loaded,
three barriers a chunk, and the products' round trip through local memory to each row."""

from __future__ import annotations

XWT = "diffc_mma_xwt"  # the declaration cooperative-layers calls

_SIGNATURE = ("void {name}(__local float* buf, long x_off, long ldx, long w_off, long y_off, long C, long M, "
              "long K, long lid, long group)")

_PTX = """\
inline uint diffc_mma_pack(__local const float* row, long k, long K) {
    float lo = k < K ? row[k] : 0.0f, hi = k + 1 < K ? row[k + 1] : 0.0f;
    uint r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

SIGNATURE {
    int lane = (int)(lid & 31), warp = (int)(lid >> 5), warps = (int)(group >> 5);
    int g = lane >> 2, t = lane & 3;
    int tiles_n = (int)((M + 7) >> 3), tiles = (int)((C + 15) >> 4) * tiles_n;
    for (int tile = warp; tile < tiles; tile += warps) {  /* uniform in the warp */
        long s0 = (long)(tile / tiles_n) << 4, n0 = (long)(tile % tiles_n) << 3;
        long sa = s0 + g, sb = sa + 8, n = n0 + g;
        __local const float* xa = buf + x_off + sa * ldx;
        __local const float* xb = buf + x_off + sb * ldx;
        __local const float* wr = buf + w_off + n * K;
        float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
        for (long k0 = 0; k0 < K; k0 += 16) {
            long k = k0 + 2 * t;
            uint a0 = sa < C ? diffc_mma_pack(xa, k, K) : 0u, a1 = sb < C ? diffc_mma_pack(xb, k, K) : 0u;
            uint a2 = sa < C ? diffc_mma_pack(xa, k + 8, K) : 0u, a3 = sb < C ? diffc_mma_pack(xb, k + 8, K) : 0u;
            uint b0 = n < M ? diffc_mma_pack(wr, k, K) : 0u, b1 = n < M ? diffc_mma_pack(wr, k + 8, K) : 0u;
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
        long c = n0 + 2 * t;
        __local float* y = buf + y_off;
        if (c < M && sa < C) y[sa * M + c] = d0;
        if (c + 1 < M && sa < C) y[sa * M + c + 1] = d1;
        if (c < M && sb < C) y[sb * M + c] = d2;
        if (c + 1 < M && sb < C) y[sb * M + c + 1] = d3;
    }
}"""

_PLAIN = """\
SIGNATURE {
    for (long e = lid; e < C * M; e += group) {
        long s = e / M, i = e % M;
        float sum = 0.0f;
        for (long k = 0; k < K; k++)
            sum += buf[w_off + i * K + k] * buf[x_off + s * ldx + k];
        buf[y_off + e] = sum;
    }
}"""


def xwt_helper(name: str, ptx: bool) -> str:
    """The C text of `name` (XWT's C name): tensor-core tiles when `ptx`, else plain sums."""
    return (_PTX if ptx else _PLAIN).replace("SIGNATURE", _SIGNATURE.format(name=name))


PROBE = _PTX.replace("SIGNATURE", _SIGNATURE.format(name="diffc_mma_probe")) + """

__kernel void diffc_mma_probe_kernel(__global float* out) {
    __local float buf[16 * 16 + 8 * 16 + 16 * 8];
    for (int e = get_local_id(0); e < 384; e += 32) buf[e] = 1.0f;  /* X 16 x 16, W 8 x 16: ones */
    barrier(CLK_LOCAL_MEM_FENCE);
    diffc_mma_probe(buf, 0, 16, 256, 384, 16, 8, 16, get_local_id(0), 32);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_local_id(0)] = buf[384 + get_local_id(0)];
}
"""
