"""Matrices (floatRxC, matrix<T, R, C>, half/double): values against numpy, derivatives of
mul / transpose / determinant / elementwise ops / indexing against float64 central differences
in reverse mode and forward against reverse (<u, J v> = <J^T u, v>), over several shapes, and
located errors for shape mismatches."""

from __future__ import annotations

import numpy as np
import pytest

from slang_helpers import central_difference, expect_error, floats, lowered, run

# (R, K, C): a is RxK, b is KxC, v has K elements, w has R
SHAPES = [(2, 2, 2), (3, 3, 3), (4, 4, 4), (2, 3, 4), (3, 1, 2), (1, 4, 3), (4, 2, 1), (3, 2, 3)]


def vec(n: int) -> str:
    return f"float{n}"


def comp(name: str, n: int, i: int) -> str:
    """Element i of a vector of n elements (a float1 is a scalar: .x still reads it)."""
    return f"{name}.{'xyzw'[i]}"


def weights(r: int, c: int) -> np.ndarray:
    return np.array([[0.125 * (i + 2 * j + 1) * (-1) ** j for j in range(c)] for i in range(r)])


def weighted(name: str, r: int, c: int) -> str:
    """Slang for sum_ij W[i][j] * name._mij (the loss's fixed weights, see weights())."""
    w = weights(r, c)
    return " + ".join(f"{float(w[i, j])!r} * {name}._m{i}{j}" for i in range(r) for j in range(c))


def source(r: int, k: int, c: int) -> str:
    a_t, b_t = f"float{r}x{k}", f"float{k}x{c}"
    det = "determinant(a) * 0.5" if r == k else "0.0"
    # a float1 is a scalar, and mul(scalar, matrix) scales: the vector products need k, r > 1
    pv = " + ".join(f"{0.25 * (i + 1)!r} * {comp('av', r, i)}" for i in range(r)) if k > 1 else "0.0"
    pw = " + ".join(f"{-0.375 * (i + 1)!r} * {comp('wa', k, i)}" for i in range(k)) if r > 1 else "0.0"
    av = f"{vec(r)} av = mul(a, v);" if k > 1 else ""
    wa = f"{vec(k)} wa = mul(w, a);" if r > 1 else ""
    return f"""
[Differentiable]
float f({a_t} a, {b_t} b, {vec(k)} v, {vec(r)} w)
{{
    float{r}x{c} p = mul(a, b);
    {av}
    {wa}
    float{k}x{r} t = transpose(a);
    {a_t} e = a * a - a / 2.0 + 1.5 * a;
    e[0] = e[0] * sin(a._m00);
    e._m00 += a._11 * b._m00;
    return {weighted('p', r, c)} + {pv} + {pw} + {weighted('t', k, r)} + {weighted('e', r, k)} + {det};
}}

struct Grads {{ {a_t} a; {b_t} b; {vec(k)} v; {vec(r)} w; }};

Grads grad({a_t} a, {b_t} b, {vec(k)} v, {vec(r)} w)
{{
    DifferentialPair<{a_t}> da = diffPair(a);
    var db = diffPair(b);
    var dv = diffPair(v);
    var dw = diffPair(w);
    bwd_diff(f)(da, db, dv, dw, 1.0);
    Grads g = {{ da.d, db.d, dv.d, dw.d }};
    return g;
}}

float tangent({a_t} a, {b_t} b, {vec(k)} v, {vec(r)} w, {a_t} ta, {b_t} tb, {vec(k)} tv, {vec(r)} tw)
{{
    return fwd_diff(f)(diffPair(a, ta), diffPair(b, tb), diffPair(v, tv), diffPair(w, tw)).d;
}}
"""


def numpy_f(r, k, c, a, b, v, w):
    p, av, wa, t = a @ b, a @ v, w @ a, a.T
    e = a * a - a / 2.0 + 1.5 * a
    e[0] = e[0] * np.sin(a[0, 0])
    e[0, 0] += a[0, 0] * b[0, 0]
    det = np.linalg.det(a) * 0.5 if r == k else 0.0
    pv = sum(0.25 * (i + 1) * av[i] for i in range(r)) if k > 1 else 0.0
    pw = sum(-0.375 * (i + 1) * wa[i] for i in range(k)) if r > 1 else 0.0
    return (np.sum(weights(r, c) * p) + pv + pw + np.sum(weights(k, r) * t)
            + np.sum(weights(r, k) * e) + det)


def args_of(a, b, v, w):
    """Interpreter arguments: a matrix is its rows (a scalar per row when it has one column)."""
    def rows(m):
        return [row if m.shape[1] > 1 else float(row[0]) for row in m]

    def vector(x):
        return x if len(x) > 1 else float(x[0])

    return [*rows(a), *rows(b), vector(v), vector(w)]


def point(r, k, c, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(r, k)), rng.normal(size=(k, c)), rng.normal(size=k), rng.normal(size=r)


def flat(values) -> np.ndarray:
    return np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values])


@pytest.fixture(scope="module", params=SHAPES, ids=lambda s: "x".join(map(str, s)))
def shaped(request):
    r, k, c = request.param
    return (r, k, c), lowered(source(r, k, c))


def test_values_match_numpy(shaped):
    (r, k, c), m = shaped
    for seed in (1, 2):
        a, b, v, w = point(r, k, c, seed)
        (got,) = run(m, "f", *args_of(a, b, v, w))
        assert got == pytest.approx(numpy_f(r, k, c, a, b, v, w), rel=1e-12, abs=1e-12)


def test_reverse_matches_central_differences(shaped):
    (r, k, c), m = shaped
    a, b, v, w = point(r, k, c, 3)
    x0 = flat([a, b, v, w])
    sizes = [r * k, k * c, k, r]

    def unpack(x):
        parts = np.split(np.asarray(x), np.cumsum(sizes)[:-1])
        return parts[0].reshape(r, k), parts[1].reshape(k, c), parts[2], parts[3]

    def fval(*x):
        return run(m, "f", *args_of(*unpack(x)))[0]

    g = flat(run(m, "grad", *args_of(a, b, v, w)))
    fd = np.array([central_difference(fval, list(x0), i) for i in range(len(x0))])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_forward_agrees_with_reverse(shaped):
    (r, k, c), m = shaped
    a, b, v, w = point(r, k, c, 4)
    t = point(r, k, c, 5)
    (jv,) = run(m, "tangent", *args_of(a, b, v, w), *args_of(*t))
    g = flat(run(m, "grad", *args_of(a, b, v, w)))
    assert jv == pytest.approx(float(g @ flat(t)), rel=1e-10, abs=1e-12)


FORMS = """
float2x2 ctor_scalars(float x) { return float2x2(x, 2.0, 3.0, 4.0); }
float2x3 ctor_rows(float3 r0, float3 r1) { return float2x3(r0, r1); }
float2x2 ctor_fill(float x) { return float2x2(x); }
float2x2 list_scalars(float x) { float2x2 m = { x, 2.0, 3.0 }; return m; }
float2x2 list_rows(float x) { float2x2 m = { float2(x, 1.0), float2(2.0, 3.0) }; return m; }
float2x2 list_nested(float x) { float2x2 m = { { x, 1.0 }, { 2.0, 3.0 } }; return m; }
matrix<float, 2, 3> generic_spelling(float3 r0) { matrix<float, 2, 3> m = float2x3(r0, r0 * 2.0); return m; }
double2x2 doubles(double x) { double2x2 m = double2x2(x, 1.0, 2.0, 3.0); return m * m; }
half2x2 halves(float2x2 m) { return half2x2(m); }
float2x2 from_half(half2x2 m) { float2x2 f = m; return f; }
float2 row_read(float2x2 m, int i) { return m[i]; }
float2x2 row_write(float2x2 m, int i, float2 r) { m[i] = r; return m; }
float2x2 elem_write(float2x2 m, int i, int j, float x) { m[i][j] = x; m[1][0] += 10.0; return m; }
float4 members(float2x2 m) { return float4(m._m01, m._21, m._m00_m11); }
float2x2 member_write(float2x2 m) { m._m01 = 7.0; m._22_11 = float2(8.0, 9.0); return m; }
float3x1 column(float3 v) { float3x1 c = { v.x, v.y, v.z }; return c * 2.0; }
float2x2 compound(float2x2 a, float2x2 b) { a += b; a *= 2.0; a -= b; a /= b; return a; }
float2x2 pick(bool c, float2x2 a, float2x2 b) { return c ? a : b; }
float4 mul_forms(float2x2 m, float2 v, float s)
{
    float2 a = mul(s, v);
    float2x2 b = mul(m, s);
    float d = mul(v, v);
    return float4(a.x, b._m10, d, mul(m, v).y);
}

struct Frame { float3x3 rot; float3 origin; };
float3 apply(Frame f, float3 p) { return mul(f.rot, p) + f.origin; }
float3 frame(float3x3 r, float3 o, float3 p) { Frame f = { r, o }; return apply(f, p); }
"""


@pytest.fixture(scope="module")
def forms():
    return lowered(FORMS)


def test_constructors_and_init_lists(forms):
    def mat(vals):
        return np.array([np.atleast_1d(x) for x in vals])

    np.testing.assert_array_equal(mat(run(forms, "ctor_scalars", 5.0)), [[5, 2], [3, 4]])
    np.testing.assert_array_equal(mat(run(forms, "ctor_rows", [1, 2, 3], [4, 5, 6])), [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(mat(run(forms, "ctor_fill", 1.5)), [[1.5, 1.5], [1.5, 1.5]])
    np.testing.assert_array_equal(mat(run(forms, "list_scalars", 5.0)), [[5, 2], [3, 0]])
    np.testing.assert_array_equal(mat(run(forms, "list_rows", 5.0)), [[5, 1], [2, 3]])
    np.testing.assert_array_equal(mat(run(forms, "list_nested", 5.0)), [[5, 1], [2, 3]])
    np.testing.assert_array_equal(mat(run(forms, "generic_spelling", [1, 2, 3])), [[1, 2, 3], [2, 4, 6]])
    d = np.array([[0.5, 1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(mat(run(forms, "doubles", 0.5)), d * d)
    np.testing.assert_array_equal(mat(run(forms, "halves", [1, 2], [3, 4])), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(mat(run(forms, "from_half", [1, 2], [3, 4])), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(mat(run(forms, "column", [1, 2, 3])), [[2], [4], [6]])


def test_indexing_rows_elements_and_members(forms):
    m = ([1.0, 2.0], [3.0, 4.0])
    for i in range(2):
        np.testing.assert_array_equal(run(forms, "row_read", *m, i)[0], m[i])
        got = np.array(run(forms, "row_write", *m, i, [9.0, 8.0]))
        want = np.array(m)
        want[i] = [9, 8]
        np.testing.assert_array_equal(got, want)
        for j in range(2):
            got = np.array(run(forms, "elem_write", *m, i, j, -1.0))
            want = np.array(m)
            want[i, j] = -1
            want[1, 0] += 10
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(run(forms, "members", *m)[0], [2, 3, 1, 4])
    np.testing.assert_array_equal(np.array(run(forms, "member_write", *m)), [[9, 7], [3, 8]])


def test_compound_assignment_select_scalar_mul_and_struct_fields(forms):
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.5, -1.0], [2.0, 0.25]])
    want = ((a + b) * 2.0 - b) / b
    np.testing.assert_allclose(np.array(run(forms, "compound", *a, *b)), want)
    np.testing.assert_array_equal(np.array(run(forms, "pick", True, *a, *b)), a)
    np.testing.assert_array_equal(np.array(run(forms, "pick", False, *a, *b)), b)
    v = np.array([0.5, -2.0])
    got = run(forms, "mul_forms", *a, v, 3.0)[0]
    np.testing.assert_allclose(got, [1.5, 9.0, v @ v, (a @ v)[1]])
    r = np.random.default_rng(0).normal(size=(3, 3))
    o, p = np.array([1.0, 2.0, 3.0]), np.array([0.3, -0.2, 0.9])
    np.testing.assert_allclose(run(forms, "frame", *r, o, p)[0], r @ p + o)


PAIR_SRC = """
[Differentiable]
float3 rotate(float3x3 m, float3 p) { return mul(transpose(m), p) * determinant(m); }

float3x3 grad_m(float3x3 m, float3 p)
{
    DifferentialPair<float3x3> dm = diffPair(m);
    var dp = diffPair(p);
    bwd_diff(rotate)(dm, dp, float3(1.0, -2.0, 0.5));
    return dm.d;
}

float3 tangent_of(DifferentialPair<float3x3> dm, float3 p)
{
    DifferentialPair<float3> r = fwd_diff(rotate)(dm, diffPair(p, float3(0.0)));
    return r.d;
}

float3 tangent(float3x3 m, float3 p, float3x3 tm) { return tangent_of(diffPair(m, tm), p); }
"""


def test_differential_pair_of_a_matrix_in_both_modes():
    m = lowered(PAIR_SRC)
    rng = np.random.default_rng(11)
    mat, p = rng.normal(size=(3, 3)), rng.normal(size=3)
    u = np.array([1.0, -2.0, 0.5])

    def scalar(*x):
        mm = np.array(x).reshape(3, 3)
        return float(u @ (mm.T @ p * np.linalg.det(mm)))

    g = np.array(run(m, "grad_m", *mat, p)).ravel()
    fd = [central_difference(scalar, list(mat.ravel()), i) for i in range(9)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    tm = rng.normal(size=(3, 3))
    (jv,) = run(m, "tangent", *mat, p, *tm)
    assert float(u @ jv) == pytest.approx(float(g @ tm.ravel()), rel=1e-10)


@pytest.mark.parametrize("src,line,col,words", [
    ("float f(float3x3 a, float2x2 b) { float3x3 c = a + b; return c._m00; }",
     1, 48, "operator '+' cannot combine float3x3 and float2x2: the shapes differ"),
    ("float3 f(float3x2 a, float3 v) { return mul(a, v); }",
     1, 41, "mul cannot multiply float3x2 by float3: 2 columns against 3 rows"),
    ("float3 f(float3x3 a, float3 v) { return a * v; }",
     1, 41, "operator '*' cannot combine float3x3 and float3: use mul() for the matrix product"),
    ("float f(float2x3 a) { return determinant(a); }",
     1, 42, "determinant needs a square matrix, got float2x3"),
    ("float3 f(float3 v) { return transpose(v); }",
     1, 39, "transpose needs a matrix, got float3"),
    ("float f(float3x3 a) { float2x2 b = a; return b._m00; }",
     1, 36, "expected a value of type float2x2, got float3x3"),
    ("float f(float2x2 a, float2x2 b) { a *= float2(1.0, 2.0); return a._m00; }",
     1, 35, "operator '*=' cannot combine float2x2 with float2"),
    ("float f(float2x2 a, float2x2 b) { return a == b ? 1.0 : 0.0; }",
     1, 42, "operator '==' is not defined on matrices"),
    ("float f(float2x2 m) { return !m ? 1.0 : 0.0; }",
     1, 31, "operator '!' is not defined on matrices, got float2x2"),
    ("float f(float2x2 m) {\n    return m[2][0];\n}",
     2, 14, "row 2 is out of range for float2x2 (rows 0 to 1)"),
])
def test_shape_mismatches_are_located(src, line, col, words):
    expect_error(src, "E0003", line, col, words)


def test_constructor_element_count_and_members_are_located():
    expect_error("float2x2 f(float x) { return float2x2(x, x, x); }", "E0005", 1, 30,
                 "float2x2 constructor needs 4 elements, got 3")
    expect_error("float f(float2x2 m) {\n    return m._m22;\n}", "E0004", 2, 14, "has no element (2, 2)")
    expect_error("float f() { float2x2 m = { 1.0, 2.0, 3.0, 4.0, 5.0 }; return m._m00; }", "E0005", 1, 26,
                 "too many initializers for float2x2: expected 4 elements, got 5")


def test_matrix_and_vector_stay_usable_as_variable_names():
    src = """
float f(float* matrix, float vector) { return matrix[1] * vector + float(matrix<float, 1, 2>(1.0, 2.0)._m01); }
"""
    assert run(lowered(src), "f", floats([3.0, 5.0]), 0, 2.0)[0] == 12.0


KERNEL = """
[Differentiable]
float energy(float3x3 m, float3 p) { float3 q = mul(m, p) + mul(p, transpose(m)); return dot(q, q) + determinant(m); }

[shader("compute")]
[numthreads(4, 1, 1)]
void grads(uint3 tid : SV_DispatchThreadID, float3x3* mats, float3* points, float3x3* out, int count)
{
    int i = int(tid.x);
    if (i >= count) return;
    var dm = diffPair(mats[i]);
    var dp = diffPair(points[i]);
    bwd_diff(energy)(dm, dp, 1.0);
    float3x3 g = dm.d;
    g[i % 3][(i + 1) % 3] += float(i);   // a runtime row and column
    out[i] = g;
}
"""


def test_matrix_gradients_in_a_kernel_on_pocl():
    pytest.importorskip("pyopencl")
    import diffc
    from diffc.runtime.module import load_module_from_string

    n = 6
    rng = np.random.default_rng(2)
    mats, points = rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3))
    out = diffc.Tensor.zeros(n * 9)
    m = load_module_from_string(KERNEL, "grads.slang")
    m.grads.dispatch(thread_count=n, mats=diffc.Tensor.from_numpy(mats.ravel().astype(np.float32)),
                     points=diffc.Tensor.from_numpy(points.ravel().astype(np.float32)), out=out, count=n)
    got = out.numpy().reshape(n, 3, 3)
    for i in range(n):
        a, p = mats[i], points[i]
        # energy = |2 M p|^2 + det M: d/dM = 8 (M p) p^T + det(M) M^-T
        want = 8 * np.outer(a @ p, p) + np.linalg.det(a) * np.linalg.inv(a).T
        want[i % 3, (i + 1) % 3] += i
        np.testing.assert_allclose(got[i], want, rtol=1e-4, atol=1e-4)


def test_matrices_in_memory_are_row_major_and_writable_in_parts():
    src = """
void f(float2x2* p, int i, float x)
{
    p[i][1] = float2(x, x + 1.0);   // a row of element i
    p[i]._m00 = 7.0;
    p[i][0][1] += x;
    (*p)._m10 = -1.0;
}
float3 g(float3x3* p) { return mul(p[1], float3(1.0, 0.0, 0.0)); }   // column 0 of the second matrix
"""
    m = lowered(src)
    buf = floats(range(8))
    run(m, "f", buf, 0, 1, 10.0)
    assert buf.data == [0.0, 1.0, -1.0, 3.0, 7.0, 15.0, 10.0, 11.0]
    np.testing.assert_array_equal(run(m, "g", floats(range(18)), 0)[0], [9.0, 12.0, 15.0])


@pytest.mark.parametrize("elem", ["double", "half", "float"])
def test_double_and_half_matrices_differentiate(elem):
    src = f"""
[Differentiable]
{elem} h({elem}2x2 m, {elem} s) {{ {elem}2x2 g = mul(m, transpose(m)) * s; return determinant(g) + g._m01; }}

{elem}3 grad({elem}2x2 m, {elem} s)
{{
    var dm = diffPair(m);
    var ds = diffPair(s);
    bwd_diff(h)(dm, ds, 1.0);
    return {elem}3(dm.d._m00, dm.d._m11, ds.d);
}}
"""
    m = lowered(src)
    a, s = np.array([[0.75, -0.5], [0.25, 1.5]]), 1.25

    def hval(*x):
        mm = np.array(x[:4]).reshape(2, 2)
        g = mm @ mm.T * x[4]
        return float(np.linalg.det(g) + g[0, 1])

    x0 = [*a.ravel(), s]
    assert run(m, "h", *a, s)[0] == pytest.approx(hval(*x0), rel=1e-12)
    want = [central_difference(hval, x0, i) for i in (0, 3, 4)]
    np.testing.assert_allclose(run(m, "grad", *a, s)[0], want, rtol=1e-6)
