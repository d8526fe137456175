"""`m.entry.dispatch(thread_count=..., **arguments)` on hand-written front-end IR (compute entry
points with pointer, struct and scalar parameters), run on PoCL. Expected values from numpy."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import CallError, RuntimeDiffcError
from diffc.runtime.module import load_module_from_string

SCALE = """
func.func @scale(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}, %factor: f32, %count: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 32, 1, 1>} {
  %past = arith.cmpi uge, %tid, %count : i32
  scf.if %past {
  } else {
    %i = arith.index_cast %tid : i32 to index
    %a = arith.addi %src_off, %i : index
    %v = memref.load %src[%a] : memref<?xf32>
    %r = arith.mulf %v, %factor : f32
    %b = arith.addi %dst_off, %i : index
    memref.store %r, %dst[%b] : memref<?xf32>
  }
  func.return
}
func.func @vectors(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}, %v: vector<2xf32>, %w: vector<3xi32>, %flag: i1) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 1, 1, 1>} {
  %v0 = vector.extract %v[0] : f32 from vector<2xf32>
  %v1 = vector.extract %v[1] : f32 from vector<2xf32>
  %w2 = vector.extract %w[2] : i32 from vector<3xi32>
  %w2f = arith.sitofp %w2 : i32 to f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %i0 = arith.addi %dst_off, %c0 : index
  %i1 = arith.addi %dst_off, %c1 : index
  %i2 = arith.addi %dst_off, %c2 : index
  %i3 = arith.addi %dst_off, %c3 : index
  memref.store %v0, %dst[%i0] : memref<?xf32>
  memref.store %v1, %dst[%i1] : memref<?xf32>
  memref.store %w2f, %dst[%i2] : memref<?xf32>
  %f = arith.uitofp %flag : i1 to f32
  memref.store %f, %dst[%i3] : memref<?xf32>
  func.return
}
func.func @helper(%x: f32) -> f32 {
  func.return %x : f32
}
"""

# The shape of the MLP seed's training kernel: a struct of pointers (flattened into leaves
# network_layer1_weights, ...), half parameters and gradients, a float loss whose bits are
# max-ed into an Atomic<uint>, and `if (tid >= count) return;`.
LEARN = """
func.func @learn(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"},
                 %network_layer1_weights: memref<?xf16> {diff.abi = #diff.abi<pointer of "network_layer1_weights">}, %network_layer1_weights_off: index {diff.abi = #diff.abi<offset of "network_layer1_weights">},
                 %network_layer1_grads: memref<?xf16> {diff.abi = #diff.abi<pointer of "network_layer1_grads">}, %network_layer1_grads_off: index {diff.abi = #diff.abi<offset of "network_layer1_grads">},
                 %network_scale: f32,
                 %lossBuffer: memref<?xi32> {diff.abi = #diff.abi<pointer of "lossBuffer">}, %lossBuffer_off: index {diff.abi = #diff.abi<offset of "lossBuffer">},
                 %inputs: memref<?xf32> {diff.abi = #diff.abi<pointer of "inputs">}, %inputs_off: index {diff.abi = #diff.abi<offset of "inputs">}, %count: i32)
    attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %past = arith.cmpi uge, %tid, %count : i32
  scf.if %past {
  } else {
    %i = arith.index_cast %tid : i32 to index
    %c4 = arith.constant 4 : index
    %k = arith.remui %i, %c4 : index
    %xi = arith.addi %inputs_off, %i : index
    %x = memref.load %inputs[%xi] : memref<?xf32>
    %wi = arith.addi %network_layer1_weights_off, %k : index
    %wh = memref.load %network_layer1_weights[%wi] : memref<?xf16>
    %w = arith.extf %wh : f16 to f32
    %r1 = arith.mulf %x, %x : f32
    %r2 = arith.mulf %r1, %w : f32
    %r3 = arith.mulf %r2, %w : f32
    %loss = arith.mulf %r3, %network_scale : f32
    %xh = arith.truncf %x : f32 to f16
    %gi = arith.addi %network_layer1_grads_off, %k : index
    %old = "memref.atomic_rmw"(%xh, %network_layer1_grads, %gi) <{kind = 0 : i64}> : (f16, memref<?xf16>, index) -> f16
    %bits = arith.bitcast %loss : f32 to i32
    %prev = "memref.atomic_rmw"(%bits, %lossBuffer, %lossBuffer_off) <{kind = 5 : i64}> : (i32, memref<?xi32>, index) -> i32
  }
  func.return
}
"""

# A uint3 thread id over a 2-d dispatch, a global buffer, and f32 <-> i32 bitcasts.
GRID = """
"memref.global"() <{sym_name = "rows", type = memref<?xi32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @grid(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}, %out: memref<?xi32> {diff.abi = #diff.abi<pointer of "out">}, %out_off: index {diff.abi = #diff.abi<offset of "out">}, %width: i32, %height: i32, %x0: f32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 8, 4, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %y = vector.extract %tid[1] : i32 from vector<3xi32>
  %in_x = arith.cmpi ult, %x, %width : i32
  %in_y = arith.cmpi ult, %y, %height : i32
  %inside = arith.andi %in_x, %in_y : i1
  scf.if %inside {
    %xf = arith.sitofp %x : i32 to f32
    %f = arith.addf %xf, %x0 : f32
    %bits = arith.bitcast %f : f32 to i32
    %back = arith.bitcast %bits : i32 to f32
    %again = arith.bitcast %back : f32 to i32
    %row = arith.muli %y, %width : i32
    %cell = arith.addi %row, %x : i32
    %c = arith.index_cast %cell : i32 to index
    %j = arith.addi %out_off, %c : index
    memref.store %again, %out[%j] : memref<?xi32>
    %rows = memref.get_global @rows : memref<?xi32>
    %yi = arith.index_cast %y : i32 to index
    %one = arith.constant 1 : i32
    %n = "memref.atomic_rmw"(%one, %rows, %yi) <{kind = 1 : i64}> : (i32, memref<?xi32>, index) -> i32
  }
  func.return
}
"""


def _load(text: str):
    return load_module_from_string(text, "k.mlir")

# The MLP seed's training loop in miniature: a layer y = w * x reading its weight through a
# pointer, with a custom backward derivative that accumulates dL/dw into a half gradient buffer
# with an atomic add; a kernel runs bwd_diff(loss) per input, another takes the descent step.
TRAIN = """
func.func @layer(%w: memref<?xf16>, %w_off: index, %g: memref<?xf16>, %g_off: index, %x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @layer_bwd} {
  %wh = memref.load %w[%w_off] : memref<?xf16>
  %wf = arith.extf %wh : f16 to f32
  %y = arith.mulf %wf, %x : f32
  func.return %y : f32
}
func.func @layer_bwd(%w: memref<?xf16>, %w_off: index, %g: memref<?xf16>, %g_off: index, %x: f32, %dy: f32) -> f32 {
  %wh = memref.load %w[%w_off] : memref<?xf16>
  %wf = arith.extf %wh : f16 to f32
  %dw = arith.mulf %x, %dy : f32
  %dwh = arith.truncf %dw : f32 to f16
  %old = "memref.atomic_rmw"(%dwh, %g, %g_off) <{kind = 0 : i64}> : (f16, memref<?xf16>, index) -> f16
  %dx = arith.mulf %wf, %dy : f32
  func.return %dx : f32
}
func.func @loss(%w: memref<?xf16>, %w_off: index, %g: memref<?xf16>, %g_off: index, %x: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable} {
  %y = func.call @layer(%w, %w_off, %g, %g_off, %x) : (memref<?xf16>, index, memref<?xf16>, index, f32) -> f32
  %three = arith.constant 3.0 : f32
  %d = arith.subf %y, %three : f32
  %l = arith.mulf %d, %d : f32
  func.return %l : f32
}
func.func @learn(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %w: memref<?xf16> {diff.abi = #diff.abi<pointer of "w">}, %w_off: index {diff.abi = #diff.abi<offset of "w">}, %g: memref<?xf16> {diff.abi = #diff.abi<pointer of "g">}, %g_off: index {diff.abi = #diff.abi<offset of "g">}, %inputs: memref<?xf32> {diff.abi = #diff.abi<pointer of "inputs">}, %inputs_off: index {diff.abi = #diff.abi<offset of "inputs">}, %count: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %past = arith.cmpi uge, %tid, %count : i32
  scf.if %past {
  } else {
    %i = arith.index_cast %tid : i32 to index
    %xi = arith.addi %inputs_off, %i : index
    %x = memref.load %inputs[%xi] : memref<?xf32>
    %one = arith.constant 1.0 : f32
    diff.bwd_diff @loss(%w, %w_off, %g, %g_off, %x, %one) : (memref<?xf16>, index, memref<?xf16>, index, f32, f32) -> ()
  }
  func.return
}
func.func @adjust(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %params: memref<?xf16> {diff.abi = #diff.abi<pointer of "params">}, %params_off: index {diff.abi = #diff.abi<offset of "params">}, %grads: memref<?xf16> {diff.abi = #diff.abi<pointer of "grads">}, %grads_off: index {diff.abi = #diff.abi<offset of "grads">}, %rate: f32, %count: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %past = arith.cmpi uge, %tid, %count : i32
  scf.if %past {
  } else {
    %i = arith.index_cast %tid : i32 to index
    %pi = arith.addi %params_off, %i : index
    %gi = arith.addi %grads_off, %i : index
    %ph = memref.load %params[%pi] : memref<?xf16>
    %gh = memref.load %grads[%gi] : memref<?xf16>
    %p = arith.extf %ph : f16 to f32
    %g = arith.extf %gh : f16 to f32
    %step = arith.mulf %g, %rate : f32
    %new = arith.subf %p, %step : f32
    %newh = arith.truncf %new : f32 to f16
    memref.store %newh, %params[%pi] : memref<?xf16>
    %zero = arith.constant 0.0 : f16
    memref.store %zero, %grads[%gi] : memref<?xf16>
  }
  func.return
}
"""

# A struct with an array field: the front end names an array's leaves <field>_<i>.
ARRAYS = """
"memref.global"() <{sym_name = "hist_2", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @affine(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"},
                  %net_bias_0: f32 {diffc.name = "net_bias_0"}, %net_bias_1: f32 {diffc.name = "net_bias_1"},
                  %net_out_0: memref<?xf32> {diffc.name = "net_out_0", diff.abi = #diff.abi<pointer of "net_out_0">}, %net_out_0_off: index {diff.abi = #diff.abi<offset of "net_out_0">},
                  %net_out_1: memref<?xf32> {diffc.name = "net_out_1", diff.abi = #diff.abi<pointer of "net_out_1">}, %net_out_1_off: index {diff.abi = #diff.abi<offset of "net_out_1">})
    attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 1, 1, 1>} {
  memref.store %net_bias_0, %net_out_0[%net_out_0_off] : memref<?xf32>
  memref.store %net_bias_1, %net_out_1[%net_out_1_off] : memref<?xf32>
  %h = memref.get_global @hist_2 : memref<?xf32>
  %c0 = arith.constant 0 : index
  memref.store %net_bias_1, %h[%c0] : memref<?xf32>
  func.return
}
"""


@pytest.fixture(scope="module")
def scale():
    return _load(SCALE)


@pytest.fixture(scope="module")
def learn():
    return _load(LEARN)


@pytest.fixture(scope="module")
def grid():
    return _load(GRID)


def test_pointer_offsets_and_scalars(scale):
    src = np.arange(200, dtype=np.float32)
    s = diffc.Tensor.from_numpy(src)
    d = diffc.Tensor.from_numpy(np.full(120, -1, np.float32))
    # 50 threads -> two groups of 32; threads 50..63 are past `count` and do nothing
    scale.scale.dispatch(thread_count=50, src=s.at(10), dst=d.at(3), factor=2.5, count=50)
    want = np.full(120, -1, np.float32)
    want[3:53] = src[10:60] * np.float32(2.5)
    np.testing.assert_array_equal(d.to_numpy(), want)
    # a Tensor is a pointer to its element 0; scalars may be numpy numbers
    scale.scale.dispatch(thread_count=(4,), src=s, dst=d, factor=np.float32(-1), count=np.int32(4))
    np.testing.assert_array_equal(d.to_numpy()[:4], -src[:4])


def test_vector_and_bool_scalars(scale):
    d = diffc.Tensor.zeros(5)
    scale.vectors.dispatch(thread_count=1, dst=d.at(1), v=(1.5, -2.0), w=np.array([7, 8, -9]), flag=True)
    np.testing.assert_array_equal(d.to_numpy(), [0, 1.5, -2.0, -9, 1])
    # a uint3 component above 2^31 (mixed with negative ints) keeps its bits; read as int here
    scale.vectors.dispatch(thread_count=1, dst=d, v=[0, 0], w=(-1, 7, 3_000_000_000), flag=False)
    np.testing.assert_array_equal(d.to_numpy()[2:4], [np.float32(3_000_000_000 - 2**32), 0])
    _error(scale.vectors, r"argument 'v' is a vector<2xf32>: pass 2 numbers", "v", thread_count=1, dst=d, v=(1.0,),
           w=(1, 2, 3), flag=False)


def test_array_fields_take_lists():
    # IR name hints lose a `_<digits>` suffix: these names come from diffc.name attributes
    # (the parameters) and from the buffer's symbol (@hist_2)
    m = _load(ARRAYS)
    t, h = diffc.Tensor.zeros(4), diffc.Tensor.zeros(1)
    m.affine.dispatch(thread_count=1, net={"bias": [1.5, -2.5], "out": [t.at(3), t]}, hist_2=h)
    np.testing.assert_array_equal(t.to_numpy(), [-2.5, 0, 0, 1.5])
    assert h.to_numpy()[0] == -2.5
    _error(m.affine, r"missing field 'bias_1' of 'net' \(parameter net_bias_1\)", "net_bias_1", thread_count=1,
           net={"bias": [1.5], "out": [t, t]}, hist_2=h)
    _error(m.affine, r"unknown argument 'net.bias\[2\]'; the leaves of 'net' are: bias_0, bias_1, out_0, out_1",
           "net.bias[2]", thread_count=1, net={"bias": [1, 2, 3], "out": [t, t]}, hist_2=h)


def test_parameters_whose_names_collide_are_an_error():
    m = _load(ARRAYS.replace(' {diffc.name = "net_bias_0"}', "").replace(' {diffc.name = "net_bias_1"}', ""))
    with pytest.raises(RuntimeDiffcError, match="two parameters are named 'net_bias'.*diffc.name"):
        m.affine.dispatch(thread_count=1, net={})


def test_zero_threads_runs_nothing(scale):
    d = diffc.Tensor.from_numpy(np.zeros(4, np.float32))
    assert scale.scale.dispatch(thread_count=0, src=d, dst=d, factor=1.0, count=0) is None


def test_struct_of_half_pointers_atomics_and_loss_max(learn):
    n = 1000
    rng = np.random.default_rng(5)
    x = (rng.integers(-12, 13, n) / 4).astype(np.float32)  # quarter steps: half sums stay exact
    w = np.array([9, 9, 0.5, -1.25, 2.0, 0.75, 9], np.float16)  # the layer's 4 weights start at 2
    g = np.full(6, 0.5, np.float16)  # the layer's 4 grads start at 1: both halves of 2 words
    weights, grads = diffc.Tensor.from_numpy(w), diffc.Tensor.from_numpy(g)
    loss = diffc.Tensor.zeros(3, np.uint32)
    inputs = diffc.Tensor.from_numpy(np.concatenate([np.zeros(5, np.float32), x]))
    network = {"layer1": {"weights": weights.at(2), "grads": grads.at(1)}, "scale": 0.5}
    learn.learn.dispatch(thread_count=n, network=network, lossBuffer=loss.at(1), inputs=inputs.at(5), count=n)

    k = np.arange(n) % 4
    want_g = g.astype(np.float64)
    for b in range(4):
        want_g[1 + b] += x[k == b].sum()
    np.testing.assert_array_equal(grads.to_numpy().astype(np.float64), want_g)
    wk = w[2:6].astype(np.float32)[k]
    per_thread = x * x * wk * wk * np.float32(0.5)  # float32, in the kernel's order
    assert loss.to_numpy()[1] == per_thread.view(np.uint32).max() == per_thread.max().view(np.uint32)
    assert loss.to_numpy()[0] == 0 and loss.to_numpy()[2] == 0
    np.testing.assert_array_equal(weights.to_numpy(), w)  # read only


def test_two_dimensional_dispatch_global_buffer_and_bitcasts(grid):
    width, height = 13, 6  # rounded up to 16 x 8 work-items
    out = diffc.Tensor.from_numpy(np.full(width * height + 2, 7, np.int32))
    rows = diffc.Tensor.zeros(height + 1, np.int32)
    grid.grid.dispatch(thread_count=(width, height), out=out.at(2), width=width, height=height, x0=0.375, rows=rows)
    row = (np.arange(width, dtype=np.float32) + np.float32(0.375)).view(np.int32)
    np.testing.assert_array_equal(out.to_numpy()[2:].reshape(height, width), np.tile(row, (height, 1)))
    np.testing.assert_array_equal(out.to_numpy()[:2], [7, 7])
    np.testing.assert_array_equal(rows.to_numpy(), [width] * height + [0])


def test_bwd_diff_through_pointers_accumulates_half_gradients_and_trains():
    m = _load(TRAIN)
    n = 64
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    w0 = np.float16(0.75)
    params = diffc.Tensor.from_numpy(np.array([5, w0, 5], np.float16))
    grads = diffc.Tensor.zeros(3, np.float16)
    inputs = diffc.Tensor.from_numpy(x)

    def total_loss(w: float) -> float:
        return float(((w * x.astype(np.float64) - 3) ** 2).sum())

    m.learn.dispatch(thread_count=n, w=params.at(1), g=grads.at(1), inputs=inputs, count=n)
    h = 1e-4
    fd = (total_loss(float(w0) + h) - total_loss(float(w0) - h)) / (2 * h)  # float64 central differences
    g = grads.to_numpy().astype(np.float64)
    # n half-precision atomic adds: each rounds by at most half an ulp of the running sum
    assert abs(g[1] - fd) <= n * 2.0**-11 * abs(fd), (g[1], fd)
    assert g[0] == 0 and g[2] == 0

    rate = 0.005
    for _ in range(40):
        m.adjust.dispatch(thread_count=1, params=params.at(1), grads=grads.at(1), rate=rate, count=1)
        m.learn.dispatch(thread_count=n, w=params.at(1), g=grads.at(1), inputs=inputs, count=n)
    best = 3 * x.astype(np.float64).sum() / (x.astype(np.float64) ** 2).sum()  # least squares
    w = params.to_numpy().astype(np.float64)
    assert abs(w[1] - best) < 4e-3, (w[1], best)
    assert w[0] == 5 and w[2] == 5


def test_the_program_is_built_once_per_module(learn):
    from diffc.runtime.dispatch import entry_program

    p = entry_program(learn)
    assert entry_program(learn) is p
    # the half gradient add: a compare-and-swap helper, or on NVIDIA ("ptx") a warp-aggregated red
    assert "diffc_atomic_fetch_add_half_global(" in p.source or "diffc_warp_atomic_add_f16(" in p.source
    assert [q.name for q in p.kernels["learn"].params][:3] == [
        "network_layer1_weights", "network_layer1_weights_off", "network_layer1_grads"]


# -- errors -------------------------------------------------------------------------------


def _learn_args():
    w = diffc.Tensor.zeros(4, np.float16)
    return dict(
        network={"layer1": {"weights": w, "grads": diffc.Tensor.zeros(4, np.float16)}, "scale": 1.0},
        lossBuffer=diffc.Tensor.zeros(1, np.uint32),
        inputs=diffc.Tensor.zeros(4),
        count=4,
    )


def _error(fn, match: str, argument: str | None = None, **kwargs):
    with pytest.raises(CallError, match=match) as info:
        fn.dispatch(**kwargs)
    assert "Traceback" not in str(info.value)
    if argument is not None:
        assert info.value.argument == argument
    return str(info.value)


def test_missing_struct_field_is_named(learn):
    args = _learn_args()
    del args["network"]["layer1"]["grads"]
    msg = _error(learn.learn, "missing field 'layer1_grads' of 'network'", "network_layer1_grads", thread_count=4, **args)
    assert msg.startswith("error: learn.dispatch:")


def test_missing_and_unknown_arguments(learn):
    args = _learn_args()
    del args["count"]
    _error(learn.learn, "missing argument 'count'", "count", thread_count=4, **args)
    args = _learn_args()
    _error(learn.learn, "unknown argument 'extra'.*parameters: .*count", "extra", thread_count=4, extra=1, **args)
    args = _learn_args()
    args["network"]["layer1"]["wieghts"] = args["network"]["layer1"].pop("weights")
    _error(learn.learn, r"unknown argument 'network.layer1.wieghts'; the leaves of 'network' are: layer1_weights, "
                        r"layer1_grads, scale", "network.layer1.wieghts", thread_count=4, **args)
    args = _learn_args()
    _error(learn.learn, r"'tid' is the thread id \(SV_DispatchThreadID\)", "tid", thread_count=4, tid=0, **args)
    args = _learn_args()
    _error(learn.learn, "offsets come with pointers", "inputs_off", thread_count=4, inputs_off=1, **args)


def test_wrongly_typed_arguments(learn):
    args = _learn_args()
    args["network"]["layer1"]["weights"] = diffc.Tensor.zeros(4, np.float32)
    _error(learn.learn, r"argument 'network_layer1_weights' is a float32 Tensor, the parameter \(memref<\?xf16>\) "
                        "needs float16", "network_layer1_weights", thread_count=4, **args)
    args = _learn_args()
    args["inputs"] = np.zeros(4, np.float32)
    _error(learn.learn, "argument 'inputs' is a pointer.*got ndarray.*from_numpy", "inputs", thread_count=4, **args)
    args = _learn_args()
    args["count"] = 2.5
    _error(learn.learn, r"argument 'count' is an integer \(i32\), got float", "count", thread_count=4, **args)
    args = _learn_args()
    args["count"] = 1 << 32
    _error(learn.learn, "does not fit in 32 bits", "count", thread_count=4, **args)
    args = _learn_args()
    args["network"]["scale"] = diffc.Tensor.zeros(1)
    _error(learn.learn, "argument 'network.scale' is a f32 value, got a Tensor", "network.scale", thread_count=4, **args)
    args = _learn_args()
    args["lossBuffer"] = diffc.Tensor.zeros(1, np.int64)
    _error(learn.learn, "needs int32 or uint32", "lossBuffer", thread_count=4, **args)


def test_bad_thread_counts_and_non_entry_points(scale, grid):
    d = diffc.Tensor.zeros(4)
    for bad in (-1, (1, 2, 3, 4), 2.0, "8", (True,)):
        _error(scale.scale, "thread_count", "thread_count", thread_count=bad, src=d, dst=d, factor=1.0, count=1)
    _error(scale.helper, "not a compute entry point", "helper", thread_count=1, x=1.0)
    with pytest.raises(CallError, match=r"compute entry point: run it with m.scale.dispatch\(thread_count=..., ...\)"):
        scale.scale(src=1.0, dst=1.0, factor=1.0, count=1)
    rows = diffc.Tensor.zeros(2, np.int32)
    _error(grid.grid, r"argument 'out' is a pointer/buffer \(memref<\?xi32>\): pass a Tensor or tensor.at\(offset\), "
                      "got int", "out", thread_count=1, out=5, width=1, height=1, x0=0.0, rows=rows)
    _error(grid.grid, "'rows' is a buffer without an offset: pass the Tensor itself", "rows", thread_count=1,
           out=diffc.Tensor.zeros(2, np.int32), width=1, height=1, x0=0.0, rows=rows.at(1))


def test_lowering_failure_is_located_at_the_op():
    atomic = '  %o = "memref.atomic_rmw"(%v, %m, %c0) <{kind = 11 : i64}> : (i32, memref<?xi32>, index) -> i32'
    text = SCALE + f"""
func.func @bad(%tid: i32 {{diffc.semantic = "SV_DispatchThreadID"}}, %m: memref<?xi32>, %v: i32) attributes {{diffc.shader = "compute", diffc.numthreads = array<i64: 1, 1, 1>}} {{
  %c0 = arith.constant 0 : index
{atomic}
  func.return
}}
"""
    m = _load(text)
    line = text.split("\n").index(atomic) + 1
    d = diffc.Tensor.zeros(4)
    with pytest.raises(RuntimeDiffcError) as e:
        m.scale.dispatch(thread_count=1, src=d, dst=d, factor=1.0, count=1)
    head, source, caret = str(e.value).split("\n")
    assert head.startswith(f"k.mlir:{line}:3: error: lowering the compute entry points failed: "), head
    assert "@bad: 'memref.atomic_rmw' ori is not supported" in head
    assert source == "    " + atomic and caret == "      ^"


def test_slang_array_parameters_keep_their_element_names(tmp_path):
    """The front end names array leaves `w_0`, `w_1`, ...; they must reach dispatch intact."""
    src = tmp_path / "arr.slang"
    src.write_text("""
[shader("compute")]
[numthreads(4, 1, 1)]
void weigh(uint tid : SV_DispatchThreadID, uniform float w[2], uniform float* out)
{
    out[tid] = w[0] * tid + w[1];
}
""")
    m = diffc.load_module(src)
    out = diffc.Tensor.zeros(4)
    m.weigh.dispatch(thread_count=4, w=[2.0, 0.5], out=out)
    np.testing.assert_array_equal(out.to_numpy(), [0.5, 2.5, 4.5, 6.5])
