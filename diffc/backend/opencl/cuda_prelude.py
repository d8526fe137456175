"""The CUDA target's prelude: OpenCL C's builtins, as the emitter prints them, given their meaning in
CUDA C++ (NVRTC, built with -default-device so that every function without a qualifier is a device
function). The emitter's statements stay those of OpenCL C; what differs in form (kernel heads,
`__shared__` arrays, vector literals and lanes, printf's vector conversions) is switched in the
emitter itself, what differs only in name or library is defined here.

Half storage is a 16-bit struct (`half`), converted by PTX's cvt, so no CUDA header is needed.
The vector part (operators, elementwise math, conversions, vload/vstore of 2, 3 and 4 lanes) is
printed only for a module that has vector values (ModuleParts.vectors)."""

from __future__ import annotations

from functools import cache

_BASE = r"""typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef unsigned long long diffc_uintptr;
#define uintptr_t diffc_uintptr
#define __global
#define __local
#define __private
#define __constant const
#define __ENDIAN_LITTLE__ 1
#define CLK_LOCAL_MEM_FENCE 1
#define CLK_GLOBAL_MEM_FENCE 2
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
struct __align__(2) diffc_half { unsigned short bits; };
typedef diffc_half half;

static __device__ __forceinline__ ulong get_global_id(uint d) {
    return d == 0 ? (ulong)blockIdx.x * blockDim.x + threadIdx.x
         : d == 1 ? (ulong)blockIdx.y * blockDim.y + threadIdx.y : (ulong)blockIdx.z * blockDim.z + threadIdx.z;
}
static __device__ __forceinline__ ulong get_local_id(uint d) {
    return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : threadIdx.z;
}
static __device__ __forceinline__ ulong get_group_id(uint d) {
    return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : blockIdx.z;
}
static __device__ __forceinline__ ulong get_local_size(uint d) {
    return d == 0 ? blockDim.x : d == 1 ? blockDim.y : blockDim.z;
}
static __device__ __forceinline__ ulong get_num_groups(uint d) {
    return d == 0 ? gridDim.x : d == 1 ? gridDim.y : gridDim.z;
}
static __device__ __forceinline__ ulong get_global_size(uint d) { return get_num_groups(d) * get_local_size(d); }
static __device__ __forceinline__ void barrier(int fences) {
    if (fences & CLK_GLOBAL_MEM_FENCE) __threadfence();
    __syncthreads();
}

static __device__ __forceinline__ float as_float(int x) { return __int_as_float(x); }
static __device__ __forceinline__ float as_float(uint x) { return __uint_as_float(x); }
static __device__ __forceinline__ int as_int(float x) { return __float_as_int(x); }
static __device__ __forceinline__ int as_int(uint x) { return (int)x; }
static __device__ __forceinline__ uint as_uint(float x) { return __float_as_uint(x); }
static __device__ __forceinline__ uint as_uint(int x) { return (uint)x; }
static __device__ __forceinline__ double as_double(long x) { return __longlong_as_double(x); }
static __device__ __forceinline__ double as_double(ulong x) { return __longlong_as_double((long long)x); }
static __device__ __forceinline__ long as_long(double x) { return __double_as_longlong(x); }
static __device__ __forceinline__ ulong as_ulong(double x) { return (ulong)__double_as_longlong(x); }

static __device__ __forceinline__ int popcount(int x) { return __popc((uint)x); }
static __device__ __forceinline__ uint popcount(uint x) { return __popc(x); }
static __device__ __forceinline__ long popcount(long x) { return __popcll((ulong)x); }
static __device__ __forceinline__ ulong popcount(ulong x) { return __popcll(x); }
static __device__ __forceinline__ int clz(int x) { return __clz(x); }
static __device__ __forceinline__ uint clz(uint x) { return __clz((int)x); }
static __device__ __forceinline__ long clz(long x) { return __clzll(x); }
static __device__ __forceinline__ ulong clz(ulong x) { return __clzll((long long)x); }
static __device__ __forceinline__ float pown(float x, int n) { return powf(x, (float)n); }
static __device__ __forceinline__ double pown(double x, int n) { return pow(x, (double)n); }
static __device__ __forceinline__ bool isunordered(double a, double b) { return a != a || b != b; }
static __device__ __forceinline__ bool islessgreater(double a, double b) { return a < b || a > b; }

static __device__ __forceinline__ int atomic_add(volatile int* p, int v) { return atomicAdd((int*)p, v); }
static __device__ __forceinline__ uint atomic_add(volatile uint* p, uint v) { return atomicAdd((uint*)p, v); }
static __device__ __forceinline__ int atomic_max(volatile int* p, int v) { return atomicMax((int*)p, v); }
static __device__ __forceinline__ uint atomic_max(volatile uint* p, uint v) { return atomicMax((uint*)p, v); }
static __device__ __forceinline__ int atomic_min(volatile int* p, int v) { return atomicMin((int*)p, v); }
static __device__ __forceinline__ uint atomic_min(volatile uint* p, uint v) { return atomicMin((uint*)p, v); }
static __device__ __forceinline__ int atomic_cmpxchg(volatile int* p, int cmp, int v) { return atomicCAS((int*)p, cmp, v); }
static __device__ __forceinline__ uint atomic_cmpxchg(volatile uint* p, uint cmp, uint v) {
    return atomicCAS((uint*)p, cmp, v);
}

static __device__ __forceinline__ float diffc_half_to_float(ushort b) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
    return f;
}
static __device__ __forceinline__ ushort diffc_float_to_half(float f) {
    ushort b;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(f));
    return b;
}
static __device__ __forceinline__ float vload_half(long i, const volatile half* p) {
    return diffc_half_to_float(p[i].bits);
}
static __device__ __forceinline__ void vstore_half(float v, long i, half* p) { p[i].bits = diffc_float_to_half(v); }
"""

# Elementwise math that OpenCL C gives vectors (one, two or three arguments).
_UNARY = ("fabs acos acosh asin asinh atan atanh cbrt ceil cos cosh erf exp exp2 expm1 floor log10 log1p log2 log "
          "rint round rsqrt sin sinh sqrt tan tanh trunc").split()
_BINARY = "atan2 copysign pow fmax fmin fmod".split()
_LANES = "xyzw"


def _vector_part() -> str:
    out = []
    scalars = ("float", "double", "int", "uint", "long", "ulong")
    for n in (2, 3, 4):
        lanes = _LANES[:n]
        for s in scalars:
            v = f"{s}{n}"
            mk = f"make_{v}"
            out.append(f"static __device__ __forceinline__ {v} diffc_splat_{v}({s} a) {{ return {mk}({', '.join('a' for _ in lanes)}); }}")
            ops = "+ - * /" if s in ("float", "double") else "+ - * / % & | ^ << >>"
            for o in ops.split():
                for ta, tb, la, lb in ((v, v, True, True), (v, s, True, False), (s, v, False, True)):
                    body = ", ".join(f"{'a.' + l if la else 'a'} {o} {'b.' + l if lb else 'b'}" for l in lanes)
                    out.append(f"static __device__ __forceinline__ {v} operator{o}({ta} a, {tb} b) {{ return {mk}({body}); }}")
            out.append(f"static __device__ __forceinline__ {v} operator-({v} a) {{ return {mk}({', '.join(f'-a.{l}' for l in lanes)}); }}")
            iv = f"int{n}"
            for o in "< <= > >= == !=".split():
                body = ", ".join(f"-(int)(a.{l} {o} b.{l})" for l in lanes)
                out.append(f"static __device__ __forceinline__ {iv} operator{o}({v} a, {v} b) {{ return make_{iv}({body}); }}")
            # select(b, a, c): a's lane where c's lane is set (OpenCL tests the sign bit of -1/0 lanes)
            body = ", ".join(f"c.{l} ? a.{l} : b.{l}" for l in lanes)
            out.append(f"static __device__ __forceinline__ {v} select({v} b, {v} a, {iv} c) {{ return {mk}({body}); }}")
            for d in scalars:  # convert_<d><n>(<s><n>)
                body = ", ".join(f"({d})a.{l}" for l in lanes)
                out.append(f"static __device__ __forceinline__ {d}{n} convert_{d}{n}({v} a) {{ return make_{d}{n}({body}); }}")
            vn = f"vload{n}"
            body = ", ".join(f"p[i * {n} + {k}]" for k in range(n))
            out.append(f"static __device__ __forceinline__ {v} {vn}(long i, const volatile {s}* p) {{ return {mk}({body}); }}")
            body = " ".join(f"p[i * {n} + {k}] = v.{l};" for k, l in enumerate(lanes))
            out.append(f"static __device__ __forceinline__ void vstore{n}({v} v, long i, {s}* p) {{ {body} }}")
        for s in ("float", "double"):
            v = f"{s}{n}"
            mk = f"make_{v}"
            for f in _UNARY:
                body = ", ".join(f"{f}(a.{l})" for l in lanes)
                out.append(f"static __device__ __forceinline__ {v} {f}({v} a) {{ return {mk}({body}); }}")
            for f in _BINARY:
                body = ", ".join(f"{f}(a.{l}, b.{l})" for l in lanes)
                out.append(f"static __device__ __forceinline__ {v} {f}({v} a, {v} b) {{ return {mk}({body}); }}")
            body = ", ".join(f"fma(a.{l}, b.{l}, c.{l})" for l in lanes)
            out.append(f"static __device__ __forceinline__ {v} fma({v} a, {v} b, {v} c) {{ return {mk}({body}); }}")
        body = ", ".join(f"diffc_half_to_float(p[i * {n} + {k}].bits)" for k in range(n))
        out.append(f"static __device__ __forceinline__ float{n} vload_half{n}(long i, const volatile half* p) "
                   f"{{ return make_float{n}({body}); }}")
        body = " ".join(f"p[i * {n} + {k}].bits = diffc_float_to_half(v.{l});" for k, l in enumerate(_LANES[:n]))
        out.append(f"static __device__ __forceinline__ void vstore_half{n}(float{n} v, long i, half* p) {{ {body} }}")
    return "\n".join(out) + "\n"


@cache
def prelude(vectors: bool) -> str:
    """The prelude's text; `vectors`: with the vector part."""
    return _BASE + (_vector_part() if vectors else "")


# Names a CUDA program's variables must not take: C++ keywords, CUDA's built-in variables and
# functions the prelude or the emitter calls.
CUDA_NAMES = frozenset(
    """this new delete class template typename namespace operator private protected public virtual friend
    using explicit mutable throw try catch nullptr constexpr decltype static_cast dynamic_cast const_cast
    reinterpret_cast typeid export alignas alignof noexcept thread_local static_assert and or not xor
    threadIdx blockIdx blockDim gridDim warpSize uchar ushort uint ulong diffc_uintptr diffc_half
    diffc_half_to_float diffc_float_to_half atomicAdd atomicCAS atomicMax atomicMin __syncthreads
    __threadfence make_float2 make_float3 make_float4 make_int2 make_int3 make_int4 powf""".split()
)
