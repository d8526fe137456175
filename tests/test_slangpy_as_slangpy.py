"""Code written against SlangPy's module names (`from slangpy import Module, Tensor`,
`slangpy.reflection`, `slangpy.core.native`) runs on diffc after
`diffc.slangpy.as_slangpy.install()`. A tiny library package of two files, written as such code
is, fits a 2-parameter model through reflection (the parameter struct's fields), a generic
gradient kernel called with the model object, and an optimizer step recorded into a command
encoder; its gradient is checked against float64 central differences. Run in a subprocess: the
registration changes `sys.modules`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SLANG = """
interface IModel : IDifferentiable { [Differentiable] float eval(float x); }
struct Line : IModel { float a; float b; [Differentiable] float eval(float x) { return a * x + b; } }
struct Moments { float m; float v; int it; __init(float p) { m = 0.0; v = 0.0; it = 0; } };

[Differentiable]
float loss<M : IModel>(M model, no_diff float x, no_diff float y) { float r = model.eval(x) - y; return r * r; }

// the gradient of one sample's loss in the model's fields
float2 gradient<M : IModel>(M model, float x, float y)
{
    var dm = diffPair(model);
    bwd_diff(loss<M>)(dm, x, y, 1.0);
    return float2(dm.d.a, dm.d.b);
}

struct Sgd
{
    float rate;
    void step(int i, RWStructuredBuffer<float> params, RWStructuredBuffer<float> grads, RWStructuredBuffer<Moments> states)
    {
        Moments s = states[i];
        s.it++;
        s.m = grads[i];
        params[i] -= rate * s.m;
        grads[i] = 0.0;
        states[i] = s;
    }
}
"""

LIB_MODEL = '''
from slangpy import Module, Tensor
from slangpy.reflection import SlangType, ScalarType
from slangpy.core.native import Shape
import numpy as np


class LineModel:
    def __init__(self, module: Module):
        t: SlangType = module.layout.find_type_by_name("Line")
        assert all(isinstance(f, ScalarType) for f in t.fields.values()) and t.shape == Shape(())
        self.names = list(t.fields)
        self.params = Tensor.from_numpy(module.device, np.zeros(len(self.names), np.float32))
        self.grads = Tensor.zeros_like(self.params)

    def get_this(self):
        values = self.params.to_numpy()
        return {"_type": "Line", **{n: float(v) for n, v in zip(self.names, values)}}
'''

LIB_OPTIM = '''
from slangpy import Module, CommandEncoder, InstanceList
from slangpy.core.function import FunctionNode
import numpy as np


class Trainer:
    def __init__(self, module: Module, model, rate: float):
        self.module, self.model = module, model
        sgd = module.find_struct("Sgd")
        self.step_fn: FunctionNode = module.find_function_in_struct(sgd, "step")
        self.states = module.find_struct("Moments")(model.params)
        self.this = {"rate": rate}

    def gradient(self, xs, ys):
        per_sample = self.module.gradient(self.model, xs, ys, _result="numpy")
        self.model.grads.copy_from_numpy(per_sample.sum(axis=0))

    def record(self, enc: CommandEncoder, xs, ys):
        self.gradient(xs, ys)
        idx = np.arange(len(self.model.names), dtype=np.int32)
        self.step_fn.append_to(enc, self.this, idx, self.model.params, self.model.grads, self.states)
'''

DRIVER = '''
import sys
import diffc.slangpy.as_slangpy
diffc.slangpy.as_slangpy.install()
import numpy as np
import slangpy as spy
from tinylib.model import LineModel
from tinylib.optim import Trainer

device = spy.create_device()
module = spy.Module.load_from_file(device, "line.slang")
model = LineModel(module)
xs = np.linspace(-1, 1, 16).astype(np.float32)
ys = (0.75 * xs - 0.25).astype(np.float32)

# the gradient at a = 0.3, b = 0.1 against float64 central differences of the summed loss
model.params.copy_from_numpy(np.array([0.3, 0.1], np.float32))
trainer = Trainer(module, model, rate=0.02)
trainer.gradient(xs, ys)
g = model.grads.to_numpy().copy()
model.grads.clear()
def total(a, b):
    x, y = xs.astype(np.float64), ys.astype(np.float64)
    return np.sum((a * x + b - y) ** 2)
h = 1e-6
fd = [(total(0.3 + h, 0.1) - total(0.3 - h, 0.1)) / (2 * h), (total(0.3, 0.1 + h) - total(0.3, 0.1 - h)) / (2 * h)]
assert np.allclose(g, fd, rtol=1e-4, atol=1e-4), (g, fd)

model.params.copy_from_numpy(np.zeros(2, np.float32))
losses = []
for it in range(40):
    enc = device.create_command_encoder()
    trainer.record(enc, xs, ys)
    device.wait_for_submit(device.submit_command_buffer(enc.finish()))
    a, b = model.params.to_numpy()
    losses.append(total(a, b))
assert losses[-1] < 1e-3 * losses[0], losses
assert list(trainer.states.to_numpy()["it"]) == [40, 40]
assert "slangpy" in sys.modules and sys.modules["slangpy"].Module is spy.Module
print("ok", losses[0], losses[-1])
'''


def test_a_library_written_against_slangpy_names_trains(tmp_path: Path):
    (tmp_path / "line.slang").write_text(SLANG)
    lib = tmp_path / "tinylib"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "model.py").write_text(textwrap.dedent(LIB_MODEL))
    (lib / "optim.py").write_text(textwrap.dedent(LIB_OPTIM))
    (tmp_path / "driver.py").write_text(textwrap.dedent(DRIVER))
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "driver.py"], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={"PYTHONPATH": f"{root}:{tmp_path}", "PATH": "/usr/bin:/bin", **_ocl_env()})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok")


def test_install_refuses_another_slangpy():
    code = ("import sys, types; sys.modules['slangpy'] = types.ModuleType('slangpy')\n"
            "import diffc.slangpy.as_slangpy as a\n"
            "try:\n    a.install()\nexcept ImportError as e:\n    print('refused', e)\n")
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", **_ocl_env()})
    assert "refused" in r.stdout and "another 'slangpy'" in r.stdout, r.stdout + r.stderr


def _ocl_env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k.startswith(("OCL", "POCL", "DIFFC", "HOME", "XDG"))}
