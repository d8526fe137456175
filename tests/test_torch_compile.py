"""diffc calls under torch.compile (diffc/runtime/torch_ops.py), on PoCL: a training step that
calls diffc functions compiles with fullgraph=True (no graph break: the calls are torch custom
operators), gives the eager step's numbers, and its gradients match float64 central finite
differences; the errors a call would raise eagerly are raised at compile time; second derivatives
through the operator raise as the eager node does. (Compiles are few and small: each costs
seconds on CI's 2 cores.)"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import diffc  # noqa: E402
from diffc.runtime.errors import CallError  # noqa: E402

SRC = """
[Differentiable]
T softcube<T : __BuiltinFloatingPointType>(T x) { return x * x * x / (T(1.0) + x * x); }

[Differentiable]
float damp(float x, float s, no_diff float k) { return s * sin(x) + k * x; }

[Differentiable]
float3 scale3(float3 v, float s) { return v * s; }
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("torch_compile") / "funcs.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def _model(dtype):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 4).to(dtype)
    x = torch.randn(5, 3, dtype=dtype)
    target = torch.randn(5, 4, dtype=dtype)
    return lin, x, target


def _causes(e: BaseException):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def test_compiled_training_step_matches_eager_and_finite_differences(m):
    """Linear layer -> diffc's generic softcube (in double) -> squared error, trained three SGD
    steps compiled (inductor, fullgraph) and eagerly: the same losses and parameters; the
    compiled gradient of the first step against float64 central differences of the loss."""
    lin, x, target = _model(torch.float64)
    eager_lin, _, _ = _model(torch.float64)

    def loss_of(layer, x):
        return ((m.softcube(layer(x)) - target) ** 2).mean()

    step = torch.compile(loss_of, fullgraph=True)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    eager_opt = torch.optim.SGD(eager_lin.parameters(), lr=0.1)
    for k in range(3):
        loss = step(lin, x)
        loss.backward()
        eager_loss = loss_of(eager_lin, x)
        eager_loss.backward()
        torch.testing.assert_close(loss, eager_loss, rtol=1e-12, atol=0)
        torch.testing.assert_close(lin.weight.grad, eager_lin.weight.grad, rtol=1e-10, atol=1e-14)
        if k == 0:  # the compiled gradient against central differences of the loss in float64
            h = 1e-6
            for p in (lin.weight, lin.bias):
                fd = torch.empty_like(p)
                with torch.no_grad():
                    for i in range(p.numel()):
                        old = p.view(-1)[i].item()
                        p.view(-1)[i] = old + h
                        up = loss_of(lin, x).item()
                        p.view(-1)[i] = old - h
                        down = loss_of(lin, x).item()
                        p.view(-1)[i] = old
                        fd.view(-1)[i] = (up - down) / (2 * h)
                torch.testing.assert_close(p.grad, fd, rtol=1e-6, atol=1e-9)
        for o in (opt, eager_opt):
            o.step()
            o.zero_grad()
    torch.testing.assert_close(lin.weight, eager_lin.weight, rtol=1e-12, atol=1e-15)
    assert loss.item() != pytest.approx(loss_of(lin, x).item(), rel=1e-9)  # (the steps moved it)


def test_float_function_scalars_and_broadcast_compiled_like_eager(m):
    """A float function with a broadcast tensor argument, a Python float and a no_diff keyword
    argument, held as `f = m.damp` outside the compiled function and also taken as `m.damp`
    inside: values and gradients (the broadcast one summed to its shape) as eager gives them."""
    damp = m.damp

    def f(x, s):
        return (damp(x, s, 0.5) * m.damp(x=s.sin(), s=s, k=2.0)).sum()

    x = torch.randn(4, 3, requires_grad=True)
    s = torch.randn(3, requires_grad=True)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    y = compiled(x, s)
    gx, gs = torch.autograd.grad(y, (x, s))
    ye = f(x, s)
    gxe, gse = torch.autograd.grad(ye, (x, s))
    torch.testing.assert_close(y, ye)
    torch.testing.assert_close(gx, gxe)
    torch.testing.assert_close(gs, gse)
    assert gs.shape == s.shape
    # and against torch's own autograd of the same formula
    x64, s64 = x.detach().double().requires_grad_(), s.detach().double().requires_grad_()
    ref = ((s64 * torch.sin(x64) + 0.5 * x64) * (s64 * torch.sin(torch.sin(s64)) + 2.0 * torch.sin(s64))).sum()
    rx, rs = torch.autograd.grad(ref, (x64, s64))
    torch.testing.assert_close(gx.double(), rx, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(gs.double(), rs, rtol=1e-4, atol=1e-5)


def test_no_graph_break(m):
    """torch._dynamo.explain: one graph, no break, and the diffc calls are diffc::call nodes."""

    def f(x):
        h = torch.tanh(x) * 2.0
        return (m.softcube(h) + m.damp(h, 0.3, k=1.0)).sum()

    out = torch._dynamo.explain(f)(torch.randn(8))
    assert out.graph_break_count == 0, out.break_reasons
    assert out.graph_count == 1
    targets = [str(n.target) for g in out.graphs for n in g.graph.nodes if n.op == "call_function"]
    assert sum("diffc.call" in t for t in targets) == 2, targets


@pytest.mark.parametrize("case,match", [
    ("float64", r"damp\(\): argument 'x' is a float64 torch tensor, but the parameter is float"),
    ("shape", r"damp\(\): argument 's' has shape \(4,\), which does not broadcast with shape \(3,\) of 'x'"),
    ("record", r"scale3\(\): functions with vector.*not supported under torch.compile"),
    ("numpy", r"damp\(\): under torch.compile '_result' is \"torch\" or a torch tensor"),
])
def test_compile_time_errors_are_eagers(m, case, match):
    """A call eager refuses is refused while torch.compile traces, with the same CallError."""
    calls = {
        "float64": lambda: m.damp(torch.ones(3, dtype=torch.float64), 1.0, 1.0),
        "shape": lambda: m.damp(torch.ones(3), torch.ones(4), 1.0),
        "record": lambda: m.scale3(torch.ones(2, 3), 2.0),
        "numpy": lambda: m.damp(torch.ones(3), 1.0, 1.0, _result="numpy"),
    }
    with pytest.raises(Exception) as got:
        torch.compile(calls[case], fullgraph=True, backend="eager")()
    errors = [e for e in _causes(got.value) if isinstance(e, CallError)]
    assert errors, got.value
    assert any(__import__("re").search(match, str(e)) for e in errors), errors


def test_result_tensor_written_under_compile(m):
    out = torch.empty(3)
    x = torch.tensor([0.5, -1.0, 2.0])
    torch.compile(lambda x, out: m.damp(x, 2.0, 0.25, _result=out), fullgraph=True, backend="eager")(x, out)
    torch.testing.assert_close(out, 2.0 * torch.sin(x) + 0.25 * x)


def test_operator_second_order_raises_first_order_right(m):
    """The diffc::call operator used eagerly with create_graph=True: the gradient is right and
    tied into the graph; a backward through it raises the eager path's second-order error."""
    from diffc.runtime import torch_ops

    torch_ops._plan(m.damp.handle, "", (("t", "float32", (3,)), ("n", "float"), ("n", "float")), (), "torch")
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = torch.ops.diffc.call(m.damp.handle, "tff", [x], [2.0, 0.25], [])
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    torch.testing.assert_close(g.detach(), 2.0 * torch.cos(x.detach()) + 0.25)
    assert g.requires_grad
    with pytest.raises(CallError, match=r"damp\(\): second derivatives through a diffc function are not supported"):
        g.sum().backward()
