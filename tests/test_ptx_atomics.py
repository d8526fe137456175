"""The "ptx" atomics mode (NVIDIA's OpenCL) at the level of the emitted program: PoCL cannot run
PTX, so here the C is checked for what it must do, and (where a clang with the NVPTX target is
installed) compiled to PTX, whose instructions are checked. tests/test_atomic_rmw.py runs the
adds on the device DIFFC_DEVICE picks, which is this mode on an NVIDIA GPU."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from diffc.backend.opencl import EmitOptions, emit_opencl
from diffc.cli import lowered
from diffc.runtime.module import parse_source

MLP = Path(__file__).resolve().parent.parent / "examples" / "mlp" / "mlp.slang"
HALF_FETCH_ADD, WARP_HALF_ADD = "diffc_atomic_fetch_add_half_global", "diffc_warp_atomic_add_f16"


def calls(source: str, name: str) -> list[str]:
    """The argument lists of the calls of `name` (its definition excluded)."""
    return re.findall(rf"(?:^\s+|= ){name}\(([^;{{]*)\);", source, re.M)


@pytest.fixture(scope="module")
def learn_gradient():
    low = lowered(str(MLP), "learnGradient")[0]
    return {a: emit_opencl(low, EmitOptions(atomics=a)) for a in ("cmpxchg", "ptx")}


def test_mlp_half_adds_become_warp_reds_at_every_site(learn_gradient):
    portable, ptx = learn_gradient["cmpxchg"], learn_gradient["ptx"]
    sites = calls(portable, HALF_FETCH_ADD)
    assert len(sites) >= 4  # weights and biases of both layers, in each backward pass
    assert calls(ptx, WARP_HALF_ADD) == sites  # the same adds, in the same order
    assert HALF_FETCH_ADD not in ptx and "atomic_cmpxchg" not in ptx
    assert ptx.count(f"void {WARP_HALF_ADD}(") == 1  # one helper, called at every site


def test_mlp_ptx_mode_keeps_the_loss_max_atomic(learn_gradient):
    # the batch's largest loss is an integer atomic max, the same in both modes
    assert re.search(r"atomic_max\(\(volatile __global uint\*\)", learn_gradient["ptx"])


WARP_ADDS = """
func.func @add_f16(%h: memref<?xf16>, %x: f16, %i: index) attributes {kernel.entry} {
  %unused = kernel.atomic_rmw addf %x, %h[%i] : memref<?xf16>
  func.return
}
func.func @add_f32(%f: memref<?xf32>, %y: f32, %i: index) attributes {kernel.entry} {
  kernel.atomic_add %y, %f[%i] : memref<?xf32>
  func.return
}
func.func @add_i32(%u: memref<?xi32>, %w: i32, %i: index) attributes {kernel.entry} {
  kernel.atomic_add %w, %u[%i] : memref<?xi32>
  func.return
}
"""


def _nvptx_clang() -> str | None:
    for name in ("clang", *(f"clang-{v}" for v in range(21, 13, -1))):
        path = shutil.which(name)
        if path and "nvptx64" in subprocess.run([path, "--print-targets"], capture_output=True, text=True).stdout:
            return path
    return None


@pytest.fixture(scope="module")
def ptx_functions(tmp_path_factory) -> dict[str, str]:
    """The PTX of WARP_ADDS in "ptx" mode, compiled by clang for sm_70; function name -> body."""
    clang = _nvptx_clang()
    if clang is None:
        pytest.skip("no clang with the NVPTX target to compile the emitted C to PTX")
    d = tmp_path_factory.mktemp("ptx")
    (d / "adds.cl").write_text(emit_opencl(parse_source(WARP_ADDS, "adds.mlir"), EmitOptions(atomics="ptx")))
    # standard OpenCL C calls inline assembly __asm__; clz is NVIDIA's builtin, clang's here
    subprocess.run([clang, "-x", "cl", "-cl-std=CL1.2", "-target", "nvptx64-nvidia-cuda", "-march=sm_70",
                    "-Xclang", "-finclude-default-header", "-Dasm=__asm__", "-Dclz=__builtin_clz",
                    "-O2", "-S", "-o", str(d / "adds.ptx"), str(d / "adds.cl")], check=True)
    ptx = (d / "adds.ptx").read_text()
    # `.visible .func NAME(` or `.entry NAME(`, up to the closing brace of its body
    return dict(re.findall(r"(?:\.func|\.entry)\s+(?:\([^)]*\)\s*)?(\w+)\((.*?)\n}", ptx, re.S))


@pytest.mark.parametrize("element, red", [
    ("f16", r"cvt\.rn\.f16\.f32 hsum, %f\d+; red\.global\.add\.noftz\.f16 \[%rd\d+\], hsum;"),
    ("f32", r"red\.global\.add\.f32 \[%rd\d+\], %f\d+;"),
    ("i32", r"red\.global\.add\.s32 \[%rd\d+\], %r\d+;"),
])
def test_warp_add_compiles_to_shuffles_among_the_active_lanes_and_one_red(ptx_functions, element, red):
    # the helper, and the kernel where clang inlined it: each on its own
    bodies = [text for name, text in ptx_functions.items() if name.endswith(f"add_{element}") and "activemask" in text]
    assert bodies, f"no activemask in the PTX of the {element} add"
    for body in bodies:
        [active] = re.findall(r"activemask\.b32 (%r\d+);", body)
        # peers: lanes with the same 64-bit address among the active ones
        assert re.search(rf"match\.any\.sync\.b64 %r\d+, %rd\d+, {re.escape(active)};", body)
        shuffles = re.findall(r"shfl\.sync\.(idx|bfly)\.b32 [^;]*, (0xffffffff|%r\d+);", body)
        assert {kind for kind, _ in shuffles} == {"idx", "bfly"}
        # the general path shuffles among the active lanes only; the full mask is for full warps
        assert all(mask == active for kind, mask in shuffles if kind == "idx")
        assert all(mask == "0xffffffff" for kind, mask in shuffles if kind == "bfly")
        assert len(re.findall(red, body)) == 1
        assert "atom." not in body
