"""Conformance ids: the tag a dynamic interface value has for each implementation, as the program
is compiled with them (`compile_slang(conformance_ids=...)`, `diffc run --conformance`, the file's
`//TEST_INPUT: type_conformance` lines), the rest numbered in declaration order (dynamic.py)."""

from __future__ import annotations

import numpy as np
import pytest

from diffc.cli import main
from diffc.compiler import apply_pipeline
from diffc.interp import run_function
from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang
from slang_harness import Compiled

# three implementations; createDynamicObject<IShape>(id, k) holds k in each of them
SHAPES = """
interface IShape : IDifferentiable { [Differentiable] float eval(float x); }
struct Quad : IShape { float k; [Differentiable] float eval(float x) { return k * x * x; } }
struct Lin : IShape { float k; [Differentiable] float eval(float x) { return k + sin(x); } }
struct Exp : IShape { float k; [Differentiable] float eval(float x) { return exp(k * x); } }
[Differentiable] float f(int id, float k, float x)
{
    IShape s = createDynamicObject<IShape>(id, k);
    return s.eval(x);
}
bool isLin(int id) { IShape s = createDynamicObject<IShape>(id, 1.0); return s is Lin; }
"""

IMPLS = {
    "Quad": lambda k, x: k * x * x,
    "Lin": lambda k, x: k + np.sin(x),
    "Exp": lambda k, x: np.exp(k * x),
}


def compiled(ids: dict[str, int], fname: str = "f") -> Compiled:
    return Compiled(compile_slang(SHAPES, "ids.slang", conformance_ids={"IShape": ids}), fname)


@pytest.mark.parametrize("ids, tags", [
    ({"Exp": 0, "Quad": 1, "Lin": 2}, {0: "Exp", 1: "Quad", 2: "Lin"}),  # all given, out of declaration order
    ({"Lin": 0}, {0: "Lin", 1: "Quad", 2: "Exp"}),  # the others take the free ids in declaration order
    ({"Quad": 5, "Exp": 1}, {5: "Quad", 0: "Lin", 1: "Exp"}),  # ids need not be 0..n-1
    ({}, {0: "Quad", 1: "Lin", 2: "Exp"}),  # none given: declaration order
])
def test_the_tag_selects_the_struct_given_that_id(ids, tags):
    c = compiled(ids)
    k, x = 0.6, 1.3
    for tag, name in tags.items():
        assert c.primal([tag, k, x])[0] == pytest.approx(IMPLS[name](k, x)), (tag, name)
        c.check_derivatives([tag, k, x])  # finite differences, and forward against reverse


def call(src: str, ids: dict[str, int], fname: str, *args):
    m = compile_slang(src, "ids.slang", conformance_ids={"IShape": ids})
    apply_pipeline(m)
    return run_function(m, fname, *args)[0]


def test_is_tests_the_given_id():
    assert [bool(call(SHAPES, {"Lin": 7}, "isLin", t)) for t in (0, 1, 7)] == [False, False, True]


def test_a_struct_converted_to_the_interface_gets_its_id():
    src = SHAPES + """
[Differentiable] float g(int which, float k, float x)
{
    IShape s;
    if (which == 0) s = Quad(k); else s = Exp(k);
    return s.eval(x);
}
int tagOf(int which) { IShape s; if (which == 0) s = Quad(1.0); else s = Exp(1.0); return s.__tag; }
"""
    ids = {"Exp": 3, "Quad": 9}
    assert [call(src, ids, "tagOf", w) for w in (0, 1)] == [9, 3]
    c = Compiled(compile_slang(src, "ids.slang", conformance_ids={"IShape": ids}), "g")
    for which, name in ((0, "Quad"), (1, "Exp")):
        assert c.primal([which, 0.4, 0.9])[0] == pytest.approx(IMPLS[name](0.4, 0.9))
        c.check_derivatives([which, 0.4, 0.9])


@pytest.mark.parametrize("ids, message", [
    ({"Nope": 0}, "error[E0002]: conformance id 0 is given to 'Nope' as an implementation of 'IShape', "
                  "but 'Nope' is no struct of the program"),
    ({"Plain": 1}, "error[E0003]: conformance id 1 is given to 'Plain' as an implementation of 'IShape', "
                   "but 'Plain' does not implement it"),
    ({"Quad": 2, "Exp": 2}, "error[E0003]: conformance id 2 of interface 'IShape' is given to both 'Exp' and 'Quad'"),
])
def test_wrong_ids_are_located_errors(ids, message):
    with pytest.raises(DiffcError) as e:
        compile_slang(SHAPES + "struct Plain { float a; }\n", "ids.slang", conformance_ids={"IShape": ids})
    assert message in str(e.value)
    assert "ids.slang:8:" in str(e.value)  # the first dynamic use of IShape


KERNEL = """//TEST_INPUT:ubuffer(data=[0 0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<float> outputBuffer;
{shapes}
{conformances}
[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{{
    for (int id = 0; id < 3; id++)
    {{
        var pk = diffPair(2.0);
        var px = diffPair(0.5);
        bwd_diff(f)(id, pk, px, 1.0);
        outputBuffer[id] = px.d;
    }}
}}
"""


def d_dx(name: str, k: float = 2.0, x: float = 0.5, h: float = 1e-6) -> float:
    return (IMPLS[name](k, x + h) - IMPLS[name](k, x - h)) / (2 * h)


def run_kernel(tmp_path, capsys, conformances: str, *options: str) -> list[float]:
    path = tmp_path / "k.slang"
    path.write_text(KERNEL.format(shapes=SHAPES, conformances=conformances))
    assert main(["run", str(path), *options]) == 0
    return [float(v) for v in capsys.readouterr().out.split()[2:]]


def test_diffc_run_reads_type_conformance_lines(tmp_path, capsys):
    lines = "//TEST_INPUT: type_conformance Exp:IShape = 0\n//TEST_INPUT: type_conformance Quad:IShape = 2\n"
    got = run_kernel(tmp_path, capsys, lines)
    assert got == pytest.approx([d_dx("Exp"), d_dx("Lin"), d_dx("Quad")], rel=1e-4)


def test_a_conformance_option_wins_over_the_files_line(tmp_path, capsys):
    lines = "//TEST_INPUT: type_conformance Exp:IShape = 0\n"
    got = run_kernel(tmp_path, capsys, lines, "--conformance", "Exp:IShape=2", "--conformance", "Lin:IShape=0")
    assert got == pytest.approx([d_dx("Lin"), d_dx("Quad"), d_dx("Exp")], rel=1e-4)


def test_one_id_given_twice_in_the_file_is_a_located_error(tmp_path, capsys):
    lines = "//TEST_INPUT: type_conformance Exp:IShape = 0\n//TEST_INPUT: type_conformance Lin:IShape = 0\n"
    path = tmp_path / "k.slang"
    path.write_text(KERNEL.format(shapes=SHAPES, conformances=lines))
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    line = path.read_text().splitlines().index("//TEST_INPUT: type_conformance Lin:IShape = 0") + 1
    assert f"{path}:{line}:1: error" in err and "conformance id 0 of 'IShape' is already given to 'Exp'" in err


def test_a_malformed_conformance_option_is_an_error(tmp_path, capsys):
    path = tmp_path / "k.slang"
    path.write_text(KERNEL.format(shapes=SHAPES, conformances=""))
    assert main(["run", str(path), "--conformance", "Exp=1"]) == 1
    assert "--conformance Exp=1: expected STRUCT:INTERFACE=ID" in capsys.readouterr().err


def test_load_module_takes_conformance_ids(tmp_path):
    """From Python: `diffc.load_module(path, conformance_ids=...)`; a module loaded with other
    ids (or none) is another module, also where the module cache has the first."""
    import diffc

    path = tmp_path / "ids.slang"
    path.write_text(SHAPES)
    k, x = 0.6, 1.3
    with_ids = diffc.load_module(str(path), conformance_ids={"IShape": {"Exp": 0}})
    without = diffc.load_module(str(path))
    assert float(with_ids.f(0, k, x).numpy()) == pytest.approx(IMPLS["Exp"](k, x), rel=1e-5)
    assert float(without.f(0, k, x).numpy()) == pytest.approx(IMPLS["Quad"](k, x), rel=1e-5)
    again = diffc.load_module(str(path), conformance_ids={"IShape": {"Exp": 0}})
    assert float(again.f(0, k, x).numpy()) == pytest.approx(IMPLS["Exp"](k, x), rel=1e-5)


def test_without_ids_tags_follow_the_programs_order_imports_included(tmp_path):
    """An imported file's structs come where its `import` is, before the structs after it."""
    (tmp_path / "shapes_lib.slang").write_text(
        "interface IShape : IDifferentiable { [Differentiable] float eval(float x); }\n"
        "struct Lib : IShape { float k; [Differentiable] float eval(float x) { return k * x; } }\n")
    main_src = """import shapes_lib;
struct Own : IShape { float k; [Differentiable] float eval(float x) { return k + x; } }
struct Late : IShape { float k; [Differentiable] float eval(float x) { return k - x; } }
[Differentiable] float f(int id, float k, float x)
{
    IShape s;
    if (id == 0) s = Own(k); else s = Late(k);
    return s.eval(x);
}
int tagOf(int id) { IShape s; if (id == 0) s = Own(1.0); else s = Late(1.0); return s.__tag; }
"""
    path = tmp_path / "main.slang"
    m = compile_slang(main_src, str(path))
    apply_pipeline(m)
    assert [run_function(m, "tagOf", i)[0] for i in (0, 1)] == [1, 2]  # Lib (imported first) is 0

