"""torch calls that must not give a silent wrong number (diffc/runtime/torch_bridge.py,
torch_records.py, slangpy/torch_calls.py), on PoCL:
- a second derivative through a diffc function (create_graph=True, then a backward through
  the gradient) raises a CallError that says it is not supported and why; the first-order
  gradient it made under create_graph is still right;
- a float64 torch tensor for a `float` parameter is a CallError naming the parameter and the
  fix, in every call form; a double function (or a generic one) computes in double, which
  torch.autograd.gradcheck confirms against float64 finite differences."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import diffc  # noqa: E402
from diffc.runtime.errors import CallError  # noqa: E402

SRC = """
[Differentiable]
float cube(float x) { return x * x * x; }

[Differentiable]
double cube64(double x) { return x * x * x; }

[Differentiable]
T cubeT<T : __BuiltinFloatingPointType>(T x) { return x * x * x; }

[Differentiable]
float3 scale3(float3 v, float s) { return v * s; }
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("second_order") / "funcs.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


@pytest.mark.parametrize("name,dtype", [("cube", torch.float32), ("cube64", torch.float64)])
def test_gradient_penalty_raises_and_says_why(m, name, dtype):
    """The issue's case: x**3, the gradient taken with create_graph=True, then a loss with that
    gradient in it. Before, torch took the gradient for a constant and x.grad came out as the
    first-order part alone with no word."""
    fn = getattr(m, name)
    x = torch.tensor([2.0, -1.5, 10.0], dtype=dtype, requires_grad=True)
    y = fn(x=x)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    # the gradient itself is right (3 x^2), and torch now sees that it depends on x
    torch.testing.assert_close(g.detach(), 3 * x.detach() ** 2)
    assert g.requires_grad
    loss = y.sum() + (g * g).sum()
    with pytest.raises(CallError, match=rf"{name}\(\): second derivatives through a diffc function are not "
                                        r"supported.*create_graph=True.*bwds kernel.*grad\.detach\(\)"):
        loss.backward()
    with pytest.raises(CallError, match="second derivatives"):
        torch.autograd.grad(g.sum(), x)


def test_create_graph_without_a_second_backward_still_works(m):
    """create_graph=True alone (a higher-order step that never differentiates this gradient,
    or its detached value used as a weight) gives the right first-order numbers."""
    x = torch.tensor([0.5, 3.0], requires_grad=True)
    (g,) = torch.autograd.grad(m.cube(x=x).sum(), x, create_graph=True)
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    (w * g.detach()).sum().backward()
    torch.testing.assert_close(w.grad, 3 * x.detach() ** 2)
    assert x.grad is None


def test_second_order_through_a_record_call_raises(m):
    """Functions of vector parameters go through torch_records.py: the same refusal."""
    v = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    s = torch.tensor([2.0], requires_grad=True)
    out = m.scale3(v=v, s=s)
    (gv,) = torch.autograd.grad(out.sum(), v, create_graph=True)
    torch.testing.assert_close(gv.detach(), torch.full_like(v, 2.0))
    with pytest.raises(CallError, match=r"scale3\(\): second derivatives"):
        (gv * gv).sum().backward()


def test_float64_for_a_float_parameter_is_refused(m):
    x64 = torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True)
    fix = r"argument 'x' is a float64 torch tensor, but the parameter is float.*Pass x\.float\(\)"
    with pytest.raises(CallError, match=r"cube\(\): " + fix) as e:
        m.cube(x=x64)
    assert e.value.argument == "x"
    with torch.no_grad():
        with pytest.raises(CallError, match=fix):
            m.cube(x64)
    y = m.cube(x=x64.detach().float())
    y.grad = torch.ones_like(y)
    with pytest.raises(CallError, match=fix):
        m.cube.bwds(x=x64, _result=y)
    with pytest.raises(CallError, match=fix):
        m.cube.fwds(x=x64.detach())
    with pytest.raises(CallError, match=r"scale3\(\): argument 's' is a float64 torch tensor"):
        m.scale3(v=torch.ones(1, 3), s=torch.ones(1, dtype=torch.float64))
    with pytest.raises(CallError, match=r"scale3\(\): argument 'v' is a float64 torch tensor"):
        m.scale3(v=torch.ones(1, 3, dtype=torch.float64), s=torch.ones(1))


@pytest.mark.parametrize("name", ["cube64", "cubeT"])
def test_double_functions_pass_gradcheck(m, name):
    """A double parameter (or a generic one, specialized to double by the float64 argument)
    computes in double: torch.autograd.gradcheck against float64 finite differences passes,
    and the result is float64."""
    fn = getattr(m, name)
    x = torch.tensor([1.5, -2.0, 0.25], dtype=torch.float64, requires_grad=True)
    assert fn(x=x).dtype == torch.float64
    assert torch.autograd.gradcheck(lambda t: fn(x=t), (x,), eps=1e-6, atol=1e-8, rtol=1e-7)


def test_float32_into_a_double_parameter_is_widened(m):
    """Widening loses nothing: a float32 tensor into a double parameter computes in double, and
    the gradient comes back in the input's dtype."""
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    y = m.cube64(x=x)
    assert y.dtype == torch.float64
    y.sum().backward()
    assert x.grad.dtype == torch.float32
    torch.testing.assert_close(x.grad, 3 * x.detach() ** 2)
