"""Textures (frontend/features/textures.py, runtime/textures.py): Texture2D / RWTexture2D as globals,
entry-point parameters and struct fields; reads, Load, writes, GetDimensions, bilinear
SampleLevel / Sample against a numpy reference of our own; derivatives through a function that
reads a texture against float64 central differences; binding errors and refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from slang_harness import compile_error

from diffc import cli
from diffc.runtime.errors import CallError
from diffc.runtime.module import load_module_from_string
from diffc.runtime.tensor import Tensor

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
from bench_textures import bilinear  # noqa: E402  (the float64 reference filter, shared with the benchmark)

sys.path.remove(str(BENCH))


def _load(src: str):
    return load_module_from_string(src, "k.slang")


READS = """
Texture2D<float3> tex;
RWStructuredBuffer<float> out;

[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform int mip)
{
    uint i = (tid.y * 8 + tid.x) * 7;
    float3 a = tex[tid.xy];
    float3 b = tex.Load(int3(tid.xy, mip));
    out[i + 0] = a.x; out[i + 1] = a.y; out[i + 2] = a.z; out[i + 3] = b.x; out[i + 4] = b.z;
    uint w; float h;
    tex.GetDimensions(w, h);
    out[i + 5] = w; out[i + 6] = h;
}
"""


def test_reads_load_and_get_dimensions_and_zero_outside():
    """A 3 x 5 texture of float3 read over an 8 x 6 grid: the texel where it is, 0 outside
    (D3D's out-of-range Load), and 0 from a mip level other than 0 given at run time."""
    tex = np.random.default_rng(0).random((3, 5, 3)).astype(np.float32)
    m = _load(READS)
    for mip in (0, 1):
        out = Tensor.zeros(8 * 6 * 7)
        m.main.dispatch(thread_count=(8, 6), tex=tex, out=out, mip=mip)
        got = out.to_numpy().reshape(6, 8, 7)
        want = np.zeros((6, 8, 3), np.float32)
        want[:3, :5] = tex
        np.testing.assert_array_equal(got[..., 0:3], want)
        loaded = want if mip == 0 else np.zeros_like(want)
        np.testing.assert_array_equal(got[..., 3], loaded[..., 0])
        np.testing.assert_array_equal(got[..., 4], loaded[..., 2])
        assert (got[..., 5] == 5).all() and (got[..., 6] == 3).all()


WRITES = """
[shader("compute")]
[numthreads(2, 2, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform RWTexture2D<uint> ids, uniform RWTexture2D<float2> pos,
          uniform Texture2D<int> offsets)
{
    ids[tid.xy] = tid.y * 100 + tid.x + offsets[tid.xy];
    pos[int2(tid.xy)] = float2(tid.xy) * 0.5;
    pos[int2(tid.xy)] += float2(1.0, 2.0);
}
"""


def test_writes_to_rw_textures_land_row_major_and_are_dropped_outside():
    offsets = np.arange(12, dtype=np.int32).reshape(3, 4) * 1000
    ids = Tensor.from_numpy(np.full((3, 4), 7, np.uint32))
    pos = Tensor.zeros((3, 4, 2))
    _load(WRITES).main.dispatch(thread_count=(6, 6), ids=ids, pos=pos, offsets=offsets)
    y, x = np.mgrid[0:3, 0:4]
    np.testing.assert_array_equal(ids.to_numpy(), y * 100 + x + offsets)
    np.testing.assert_array_equal(pos.to_numpy(), np.stack([x * 0.5 + 1, y * 0.5 + 2], -1))


SAMPLE = """
Texture2D<float4> tex;
SamplerState samp;
RWStructuredBuffer<float> uvs;
RWStructuredBuffer<float> out;

float4 twice(Texture2D<float4> t, SamplerState s, float2 uv) { return t.Sample(s, uv) + t.SampleLevel(s, uv, 0.0); }

[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform float lod)
{
    float2 uv = float2(uvs[2 * tid.x], uvs[2 * tid.x + 1]);
    float4 v = twice(tex, samp, uv) - tex.SampleLevel(samp, uv, lod);
    for (uint k = 0; k < 4; k++)
        out[4 * tid.x + k] = v[k];
}
"""


def test_sample_level_is_bilinear_with_clamp_to_edge_as_numpy_computes_it():
    """Inside, at texel centres, at the edges and far outside (clamped); a lod given at run time
    samples the one level there is."""
    rng = np.random.default_rng(1)
    tex = rng.random((5, 7, 4)).astype(np.float32)
    uvs = np.concatenate([rng.uniform(-0.3, 1.3, (40, 2)), [[0.5 / 7, 0.5 / 5], [1.0, 1.0], [0, 0], [-5, 9]]])
    uvs = uvs.astype(np.float32)
    out = Tensor.zeros(len(uvs) * 4)
    _load(SAMPLE).main.dispatch(thread_count=len(uvs), tex=tex, uvs=Tensor.from_numpy(uvs.ravel()), out=out, lod=3.5)
    want = np.array([bilinear(tex, float(u), float(v)) for u, v in uvs])
    np.testing.assert_allclose(out.to_numpy().reshape(-1, 4), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.to_numpy().reshape(-1, 4)[len(uvs) - 4], tex[0, 0], rtol=1e-6)  # its centre: the texel


STRUCT = """
struct Material { Texture2D<float> albedo; float scale; SamplerState samp; };

float shade(Material m, uint2 p) { return m.albedo[p] * m.scale; }

[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform Material mat, uniform RWTexture2D<float> result)
{
    result[tid.xy] = shade(mat, tid.xy) + mat.albedo.SampleLevel(mat.samp, (float2(tid.xy) + 0.5) / 4.0, 0);
}
"""


def test_a_struct_field_texture_passed_to_a_function():
    albedo = np.random.default_rng(2).random((4, 4)).astype(np.float32)
    result = Tensor.zeros((4, 4))
    _load(STRUCT).main.dispatch(thread_count=(4, 4), mat={"albedo": albedo, "scale": 3.0}, result=result)
    np.testing.assert_allclose(result.to_numpy(), albedo * 4, rtol=1e-6)


DIFF = """
Texture2D<float2> tex;
SamplerState samp;
RWStructuredBuffer<float> xs;
RWStructuredBuffer<float> out;

[Differentiable]
float f(float x, float2 uv, uint2 p)
{
    float2 s = tex.SampleLevel(samp, uv, 0);
    float2 t = tex[p];
    return x * x * t.x + sin(x) * t.y + s.x * x + s.y * s.y;
}

[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID)
{
    uint i = tid.x;
    float x = xs[3 * i];
    float2 uv = float2(xs[3 * i + 1], xs[3 * i + 2]);
    uint2 p = uint2(i % 3, i % 2);
    var dx = diffPair(x);
    var duv = diffPair(uv);
    bwd_diff(f)(dx, duv, p, 1.0);
    out[7 * i + 0] = f(x, uv, p);
    out[7 * i + 1] = dx.d;
    out[7 * i + 2] = duv.d.x;
    out[7 * i + 3] = duv.d.y;
    out[7 * i + 4] = fwd_diff(f)(diffPair(x, 1.0), diffPair(uv, float2(0.0)), p).d;
    out[7 * i + 5] = fwd_diff(f)(diffPair(x, 0.0), diffPair(uv, float2(1.0, 0.0)), p).d;
    out[7 * i + 6] = fwd_diff(f)(diffPair(x, 0.0), diffPair(uv, float2(0.0, 1.0)), p).d;
}
"""


def test_derivatives_through_texture_reads_and_sampling_against_finite_differences():
    """Texels are constants; a sample's derivative with respect to uv is the bilinear
    interpolant's. Both modes against float64 central differences of a numpy model, at uvs off
    the texel-centre grid lines (where the derivative jumps)."""
    rng = np.random.default_rng(3)
    tex = rng.random((4, 6, 2)).astype(np.float32)
    n = 12
    xs = rng.uniform(-1.5, 1.5, n)
    uvs = rng.uniform(0.02, 0.98, (n, 2))
    for k in range(2):  # keep every uv a tenth of a texel away from the centres' lines
        size = tex.shape[1 - k]
        frac = (uvs[:, k] * size - 0.5) % 1
        uvs[:, k] += np.where(np.minimum(frac, 1 - frac) < 0.1, 0.25 / size, 0)
    data = np.stack([xs, uvs[:, 0], uvs[:, 1]], 1).astype(np.float32)
    xs, uvs = data[:, 0].astype(np.float64), data[:, 1:].astype(np.float64)
    out = Tensor.zeros(7 * n)
    _load(DIFF).main.dispatch(thread_count=n, tex=tex, xs=Tensor.from_numpy(data.ravel()), out=out)
    got = out.to_numpy().reshape(n, 7)

    def f(x, u, v, i):
        s = bilinear(tex, u, v)
        t = tex[i % 2, i % 3].astype(np.float64)
        return x * x * t[0] + np.sin(x) * t[1] + s[0] * x + s[1] * s[1]

    h = 1e-6
    for i in range(n):
        x, (u, v) = xs[i], uvs[i]
        fd = [(f(x + h, u, v, i) - f(x - h, u, v, i)) / (2 * h),
              (f(x, u + h, v, i) - f(x, u - h, v, i)) / (2 * h),
              (f(x, u, v + h, i) - f(x, u, v - h, i)) / (2 * h)]
        np.testing.assert_allclose(got[i, 0], f(x, u, v, i), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[i, 1:4], fd, rtol=1e-4, atol=1e-4)  # reverse mode
        np.testing.assert_allclose(got[i, 4:7], fd, rtol=1e-4, atol=1e-4)  # forward mode


def test_binding_errors_are_call_errors_naming_the_texture():
    m = _load(READS)
    out = Tensor.zeros(8 * 6 * 7)
    bad = [
        (np.zeros((3, 5), np.float32), r"texture 'tex' needs a non-empty array of shape \(H, W, 3\).*got shape \(3, 5\)"),
        (np.zeros((3, 5, 4), np.float32), r"shape \(H, W, 3\)"),
        (np.zeros((0, 5, 3), np.float32), r"non-empty"),
        (Tensor.zeros((3, 5, 3), np.int32), r"texture 'tex' holds float32 texels, got a int32 Tensor"),
        (np.zeros((3, 5, 3), np.complex64), r"holds float32 texels, got a complex64 array"),
        ([1.0, 2.0], r"argument 'tex' is a texture: pass a Tensor or numpy array of shape \(H, W, 3\), got list"),
    ]
    for value, match in bad:
        with pytest.raises(CallError, match=match):
            m.main.dispatch(thread_count=1, tex=value, out=out, mip=0)
    with pytest.raises(CallError, match="missing texture 'tex'"):
        m.main.dispatch(thread_count=1, out=out, mip=0)
    with pytest.raises(CallError, match="unknown argument 'tex_width'"):
        m.main.dispatch(thread_count=1, tex=np.zeros((3, 5, 3), np.float32), tex_width=5, out=out, mip=0)


@pytest.mark.parametrize("body, message", [
    ("float4 v = t.Load(int3(0, 0, 2));", "Load from a mip level other than 0 is not supported"),
    ("float4 v = t.SampleLevel(s, float2(0.5), 1.0);", "SampleLevel at a level of detail other than 0 is not supported"),
    ("float4 v = t.Gather(s, float2(0.5));", "method 'Gather' is not supported"),
    ("float2 d = ddx_coarse(float2(0.5));", "'ddx_coarse' (a fragment stage's screen-space derivative"),
])
def test_what_is_not_modelled_is_a_located_e0008(body, message):
    src = f"""Texture2D t;
SamplerState s;
RWStructuredBuffer<float4> out;
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID) {{
    {body}
}}
"""
    err = compile_error(src)
    assert "prog.slang:7:" in err and "error[E0008]" in err and message in err, err


@pytest.mark.parametrize("decl, use, code, message", [
    ("Texture2D<half> t;", "", "E0008", "Texture2D<half> is not supported"),
    ("Texture3D<float> t;", "", "E0008", "type 'Texture3D' is not supported"),
    ("Texture2D<float> t;", "t[uint2(0, 0)] = 1.0;", "E0003", "cannot write to a Texture2D<float>: it is read-only"),
    ("Texture2D<int> t; SamplerState s;", "int v = t.SampleLevel(s, float2(0.5), 0);", "E0003", "SampleLevel filters float texels"),
    ("Texture2D<float> t;", "float v = t[1.5];", "E0003", "needs an int2 or uint2, got float"),
    ("Texture2D<float> t;", "float v = t.SampleLevel(1.0, float2(0.5), 0);", "E0003", "needs a SamplerState first"),
])
def test_wrong_texture_use_is_a_located_error(decl, use, code, message):
    src = f"""{decl}
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID) {{
    {use}
}}
"""
    err = compile_error(src)
    assert f"error[{code}]" in err and message in err and "prog.slang:" in err, err


def _run(tmp_path, capsys, src: str):
    path = tmp_path / "k.slang"
    path.write_text(src)
    rc = cli.main(["run", str(path)])
    out, err = capsys.readouterr()
    return rc, out.split()[2:], err


def test_diffc_run_reads_texture_and_sampler_annotations(tmp_path, capsys):
    src = """//TEST_INPUT: Texture2D(size=4, content=one):name=tex
//TEST_INPUT: set zeros = Texture2D(size=2, content=zero)
//TEST_INPUT: Sampler:name=samp
//TEST_INPUT: set block = new Params{Texture2D(size=3, content=one), Sampler}
//TEST_INPUT: set out = out ubuffer(data=[0 0 0 0 0 0], stride=4)
Texture2D tex;
Texture2D<float> zeros;
SamplerState samp;
struct Params { Texture2D<float2> t; SamplerState s; };
ParameterBlock<Params> block;
RWStructuredBuffer<float> out;
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID) {
    uint w, h;
    tex.GetDimensions(w, h);
    out[0] = w;
    out[1] = tex.SampleLevel(samp, float2(0.3, 0.6), 0).w;
    out[2] = zeros[uint2(1, 1)] + 5.0;
    block.t.GetDimensions(w, h);
    out[3] = h;
    out[4] = block.t.Sample(block.s, float2(0.1, 0.9)).y;
    out[5] = tex[uint2(4, 0)].x;
}
"""
    rc, got, err = _run(tmp_path, capsys, src)
    assert rc == 0, err
    assert [float(v) for v in got] == [4, 1, 5, 3, 1, 0]


def test_diffc_run_refuses_a_texture_content_it_does_not_model(tmp_path, capsys):
    src = """RWStructuredBuffer<float> out;
//TEST_INPUT: Texture2D(size=4, content=chessboard):name=tex
Texture2D tex;
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID) { out[0] = tex[uint2(0, 0)].x; }
"""
    rc, _, err = _run(tmp_path, capsys, src)
    assert rc != 0 and "k.slang:2:1" in err and "texture content 'chessboard' is not supported" in err, err


def test_abi_roles_of_a_texture_parameter_and_a_global():
    from xdsl.dialects import func

    from diffc.dialects.abi import AbiRoleAttr, role_of
    from diffc.frontend import compile_slang

    mod = compile_slang(WRITES, "w.slang")
    fn = next(f for f in mod.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    roles = [role_of(fn, i) for i in range(len(fn.function_type.inputs.data))]
    assert roles[1:4] == [AbiRoleAttr("texels", "ids", 1), AbiRoleAttr("width", "ids"), AbiRoleAttr("height", "ids")]
    assert roles[4] == AbiRoleAttr("texels", "pos", 2)
    assert str(roles[4]) == '#diff.abi<texels of "pos" x 2>'


@pytest.mark.parametrize("decl, message", [
    ("Texture2D<float> pick(Texture2D<float> a) { return a; }", "a function returning Texture2D<float> is not supported"),
    ("void pick(out Texture2D<float> a) { }", "an 'out' parameter of type Texture2D<float> is not supported"),
])
def test_a_texture_is_never_a_result(decl, message):
    err = compile_error(decl + "\n")
    assert "prog.slang:1:" in err and "error[E0008]" in err and message in err, err


def test_calls_over_tensors_refuse_a_texture_parameter():
    m = _load("float f(Texture2D<float> t, float x) { return t[uint2(0, 0)] * x; }\n")
    with pytest.raises(CallError, match="'t' has type Texture2D<float>, which calls over tensors cannot pass"):
        m.f(np.zeros((2, 2), np.float32), np.ones(3, np.float32))


SCENE = """
struct Scene : IDifferentiable { Texture2D<float> t; SamplerState s; float k; };

[Differentiable]
float h(Scene sc, float2 uv) { return sc.t.SampleLevel(sc.s, uv, 0) * sc.k * sc.k; }

[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform Texture2D<float> tex, uniform SamplerState s,
          uniform float u, uniform float k, uniform RWStructuredBuffer<float> out)
{
    Scene sc = { tex, s, k };
    var dsc = diffPair(sc);
    var duv = diffPair(float2(u, 0.3));
    bwd_diff(h)(dsc, duv, 1.0);
    out[0] = dsc.d.k;
    out[1] = duv.d.x;
    out[2] = fwd_diff(h)(diffPair(sc, Scene.Differential(1.0)), diffPair(float2(u, 0.3), float2(0.0))).d;
}
"""


def test_a_differentiable_struct_holding_a_texture_differentiates_its_other_fields():
    tex = np.array([[1, 2, 5], [3, 4, 0]], np.float32)
    u, k = 0.41, 1.7
    out = Tensor.zeros(3)
    _load(SCENE).main.dispatch(thread_count=1, tex=tex, u=u, k=k, out=out)

    def h(u, k):
        return bilinear(tex, u, 0.3) * k * k

    e = 1e-6
    dk = (h(u, k + e) - h(u, k - e)) / (2 * e)
    du = (h(u + e, k) - h(u - e, k)) / (2 * e)
    np.testing.assert_allclose(out.to_numpy(), [dk, du, dk], rtol=1e-5)


def test_a_repeated_dispatch_replays_with_the_texture_it_was_given():
    """A Tensor texture makes the dispatch replayable; the replay reads the tensor's new contents
    and keeps the size buffer of a global texture alive."""
    import gc

    m = _load(READS)
    tex = Tensor.from_numpy(np.ones((3, 5, 3), np.float32))
    out = Tensor.zeros(8 * 6 * 7)
    for k in range(3):
        tex.copy_from_numpy(np.full((3, 5, 3), k, np.float32))
        m.main.dispatch(thread_count=(8, 6), tex=tex, out=out, mip=0)
        gc.collect()
        Tensor.from_numpy(np.full(2, 99, np.int32))  # may reuse a freed size buffer's memory
        got = out.to_numpy().reshape(6, 8, 7)
        assert (got[:3, :5, 0] == k).all() and (got[3:, :, 0] == 0).all()
        assert (got[..., 5] == 5).all() and (got[..., 6] == 3).all()


def test_the_abi_check_refuses_a_texture_size_that_does_not_follow_its_texels():
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

    from diffc.dialects.abi import ABI, AbiRoleAttr, abi_problem
    from diffc.frontend import compile_slang

    mod = compile_slang(WRITES, "w.slang")
    fn = next(f for f in mod.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    assert abi_problem(fn) is None
    attrs = list(fn.arg_attrs.data)
    attrs[2], attrs[3] = attrs[3], attrs[2]  # ids' height before its width
    fn.arg_attrs = ArrayAttr(attrs)
    assert "parameter 2 (i32) is the height of texture \"ids\", but its width does not come right before it" \
        in abi_problem(fn)
    attrs[2] = DictionaryAttr({ABI: AbiRoleAttr("width", "ids")})
    attrs[3] = DictionaryAttr({ABI: AbiRoleAttr("width", "ids")})
    fn.arg_attrs = ArrayAttr(attrs)
    assert "parameter 3 (i32) is the width of texture \"ids\", but its texels does not come right before it" \
        in abi_problem(fn)


def test_a_mutating_method_of_a_struct_holding_a_texture_is_e0008():
    err = compile_error("struct Acc { RWTexture2D<float> t; float total;\n"
                        "    [mutating] void add(uint2 p) { total += t[p]; } };\n")
    assert "prog.slang:2:" in err and "error[E0008]" in err and "a [mutating] method of Acc" in err, err


def test_rw_texture_load_takes_two_coordinates():
    src = """
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform RWTexture2D<float> t, uniform RWStructuredBuffer<float> out)
{
    out[tid.x] = t.Load(int2(tid.x, 1)) + t.Load(tid.x);
}
"""
    t = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    out = Tensor.zeros(4)
    _load(src).main.dispatch(thread_count=4, t=Tensor.from_numpy(t), out=out)
    np.testing.assert_array_equal(out.to_numpy(), [4 + 1, 5 + 5, 6 + 0, 0])  # (3, 1) and (3, 3) are outside


@pytest.mark.parametrize("call, what", [
    ("t.SampleLevel(s, float2(0.5), 0, int2(1, 0))", "SampleLevel with more than 3 arguments"),
    ("t.Load(int3(0, 0, 0), int2(1, 0), st)", "Load with more than 2 arguments"),
])
def test_texel_offsets_are_e0008(call, what):
    err = compile_error(f"Texture2D t;\nSamplerState s;\nfloat4 f() {{ return {call}; }}\n")
    assert "prog.slang:3:" in err and "error[E0008]" in err and what in err, err


LATENTS = """
struct Latents { Texture2D<float2> planes[3]; };
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform Latents lat, uniform RWStructuredBuffer<float> out)
{
    out[tid.x] = lat.planes[0][uint2(tid.x, 0)].y + 2.0 * lat.planes[1][uint2(tid.x, 0)].y
                 + 3.0 * lat.planes[2][uint2(tid.x, 0)].y;
}
"""


def test_an_array_of_textures_takes_a_list_and_literal_indices():
    planes = [np.random.default_rng(k).random((1, 2, 2)).astype(np.float32) for k in range(3)]
    out = Tensor.zeros(2)
    _load(LATENTS).main.dispatch(thread_count=2, lat={"planes": planes}, out=out)
    np.testing.assert_allclose(out.to_numpy(), sum(p[0, :, 1] * (k + 1) for k, p in enumerate(planes)), rtol=1e-6)
    err = compile_error(LATENTS.replace("lat.planes[2]", "lat.planes[tid.x]"))
    assert "prog.slang:8:" in err and "error[E0008]" in err and "at a run-time index is not supported" in err, err


def test_the_sanitizer_reports_a_texel_nobody_wrote():
    m = load_module_from_string(READS, "k.slang", check=True)
    with pytest.raises(Exception, match=r"k.slang:\d+:\d+: error\[E0013\].*reads element \d+ of 'tex'"):
        m.main.dispatch(thread_count=(5, 3), tex=Tensor.empty((3, 5, 3)), out=Tensor.zeros(8 * 6 * 7), mip=0)


def test_diffc_run_binds_a_texture_parameter_by_name_and_names_a_missing_one(tmp_path, capsys):
    body = """RWStructuredBuffer<float> out;
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID, uniform Texture2D<float2> t) {
    uint w, h;
    t.GetDimensions(w, h);
    out[0] = w + t[uint2(1, 2)].y;
}
"""
    src = "//TEST_INPUT: set t = Texture2D(size=3, content=one)\n//TEST_INPUT: set out = out ubuffer(data=[0], stride=4)\n"
    rc, got, err = _run(tmp_path, capsys, src + body)
    assert rc == 0 and [float(v) for v in got] == [4.0], err
    rc, _, err = _run(tmp_path, capsys, "//TEST_INPUT: set out = out ubuffer(data=[0], stride=4)\n" + body)
    assert rc != 0 and "texture 't' is used by 'main' but no //TEST_INPUT declares it" in err, err


def test_load_with_a_texel_offset():
    """`t.Load(int3(x, y, 0), int2(dx, dy))` reads the texel at (x + dx, y + dy); 0 past the edge."""
    tex = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    m = _load("""
Texture2D<float> tex;
RWStructuredBuffer<float> out;
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID)
{
    out[tid.y * 6 + tid.x] = tex.Load(int3(tid.xy, 0), int2(2, -1));
}
""")
    out = Tensor.zeros(4 * 6)
    m.main.dispatch(thread_count=(6, 4), tex=tex, out=out)
    want = np.zeros((4, 6), np.float32)
    for y in range(4):
        for x in range(6):
            if 0 <= x + 2 < 6 and 0 <= y - 1 < 4:
                want[y, x] = tex[y - 1, x + 2]
    np.testing.assert_array_equal(out.to_numpy().reshape(4, 6), want)


def test_get_dimensions_of_a_mip_level():
    """`GetDimensions(mip, w, h, levels)` of a one-level texture: max(1, size >> mip), 1 level."""
    m = _load("""
Texture2D<float> tex;
RWStructuredBuffer<uint> out;
[shader("compute")]
[numthreads(1, 1, 1)]
void main(uint3 tid : SV_DispatchThreadID)
{
    uint w, h, levels;
    tex.GetDimensions(tid.x, w, h, levels);
    out[tid.x * 3] = w; out[tid.x * 3 + 1] = h; out[tid.x * 3 + 2] = levels;
}
""")
    out = Tensor.zeros(4 * 3, np.uint32)
    m.main.dispatch(thread_count=4, tex=np.zeros((5, 12), np.float32), out=out)
    want = [[max(1, 12 >> k), max(1, 5 >> k), 1] for k in range(4)]
    np.testing.assert_array_equal(out.to_numpy().reshape(4, 3), want)
