"""Programs of several files: `import`, `__exported import`, `import "file"`, `__include`,
`module` and `implementing`, each file read once, located diagnostics naming the file they are
in, and derivatives through imported functions."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled
from xdsl.dialects import func

from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang


def _write(folder, files: dict[str, str]):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


MAIN = """
import geo_utils;           // geo-utils.slang: `_` also read as `-`
__exported import "scale";  // scale.slang
import shapes.disk;         // shapes/disk.slang
[Differentiable]
float f(float x, float y)
{
    Pt p = { x, y };
    return scaled(norm2(p)) + diskArea(x);
}
"""

LIBS = {
    "geo-utils.slang": "module geo_utils;\nstruct Pt : IDifferentiable { float x; float y; }\n"
                       "[Differentiable] float norm2(Pt p) { return p.x * p.x + p.y * p.y; }\n",
    "scale.slang": "import geo_utils;\n[Differentiable] float scaled(float v) { return 3.0 * sin(v); }\n",
    "shapes/disk.slang": "import common;\n[Differentiable] float diskArea(float r) { return PI_ISH * r * r; }\n",
    "shapes/common.slang": "static const float PI_ISH = 3.0;\n",
}


def test_imported_declarations_values_and_derivatives(tmp_path):
    _write(tmp_path, LIBS)
    main = tmp_path / "main.slang"
    main.write_text(MAIN)
    c = Compiled(main.read_text(), "f", filename=str(main))
    x, y = 0.4, -0.9
    assert c.primal([x, y])[0] == pytest.approx(3.0 * np.sin(x * x + y * y) + 3.0 * x * x)
    c.check_derivatives([x, y])


def test_each_file_is_read_once_in_a_diamond_and_a_cycle(tmp_path):
    _write(tmp_path, {
        "base.slang": "float one() { return 1.0; }\n",
        "left.slang": "import base;\nimport right;\nfloat l() { return one() + 1.0; }\n",
        "right.slang": "import base;\nimport left;\nfloat r() { return one() + 2.0; }\n",
        "main.slang": "import left;\nimport right;\nimport left;\nfloat f() { return l() * r(); }\n",
    })
    main = tmp_path / "main.slang"
    m = compile_slang(main.read_text(), str(main))
    names = [op.sym_name.data for op in m.ops if isinstance(op, func.FuncOp)]
    assert sorted(names) == ["f", "l", "one", "r"]


def test_each_file_is_lexed_once(tmp_path, monkeypatch):
    """The prescan of the imported files' type names lexes each file; the parse takes those
    tokens instead of lexing it again."""
    from diffc.frontend.parser import imports, parser
    from diffc.frontend.source.lexer import tokenize

    lexed: list[str] = []

    def counting(text, filename, *args, **kwargs):
        lexed.append(filename)
        return tokenize(text, filename, *args, **kwargs)

    monkeypatch.setattr(imports, "tokenize", counting)
    monkeypatch.setattr(parser, "tokenize", counting)
    _write(tmp_path, LIBS)
    main = tmp_path / "main.slang"
    main.write_text(MAIN)
    m = compile_slang(main.read_text(), str(main))
    assert {op.sym_name.data for op in m.ops if isinstance(op, func.FuncOp)} >= {"f", "norm2", "scaled", "diskArea"}
    assert sorted(lexed) == sorted(str(tmp_path / f) for f in ["main.slang", *LIBS]), lexed


def test_include_and_implementing_make_one_module(tmp_path):
    _write(tmp_path, {
        "part-two.slang": "implementing \"main\";\nfloat two() { return base() * 2.0; }\n",
        "main.slang": "module \"main\";\nfloat base() { return 1.5; }\n__include part_two;\nfloat f() { return two(); }\n",
    })
    main = tmp_path / "main.slang"
    m = compile_slang(main.read_text(), str(main))
    assert {op.sym_name.data for op in m.ops if isinstance(op, func.FuncOp)} == {"base", "two", "f"}


def _error(tmp_path, files: dict[str, str]) -> list[str]:
    _write(tmp_path, files)
    main = tmp_path / "main.slang"
    with pytest.raises(DiffcError) as info:
        compile_slang(main.read_text(), str(main))
    return str(info.value).splitlines()


def test_an_error_in_an_imported_file_names_that_file_and_its_line(tmp_path):
    lines = _error(tmp_path, {
        "lib.slang": "float ok() { return 1.0; }\nfloat bad() { return undefinedThing; }\n",
        "main.slang": "// a comment\nimport lib;\nfloat f() { return ok() + bad(); }\n",
    })
    assert lines[0].startswith(f"{tmp_path / 'lib.slang'}:2:22: error[E0002]: undefined name 'undefinedThing'")
    assert lines[1].strip() == "float bad() { return undefinedThing; }"


def test_a_syntax_error_in_an_imported_file_names_that_file(tmp_path):
    lines = _error(tmp_path, {"lib.slang": "float ok() { return 1.0 }\n", "main.slang": "import lib;\n"})
    assert lines[0].startswith(f"{tmp_path / 'lib.slang'}:1:25: error[E0001]: expected ';'")


def test_an_error_in_the_main_file_after_an_import_keeps_its_own_lines(tmp_path):
    lines = _error(tmp_path, {"lib.slang": "float ok() { return 1.0; }\n" * 1,
                              "main.slang": "import lib;\n\nfloat f() { return ok() + nope; }\n"})
    assert lines[0].startswith(f"{tmp_path / 'main.slang'}:3:27: error[E0002]: undefined name 'nope'")


def test_a_missing_module_is_located_at_the_import(tmp_path):
    lines = _error(tmp_path, {"main.slang": "float x() { return 1.0; }\nimport no_such_thing;\n"})
    assert lines[0].startswith(f"{tmp_path / 'main.slang'}:2:1: error[E0002]: cannot find the file of import "
                               "'no_such_thing' (looked for no_such_thing.slang, no-such-thing.slang)")


def test_a_definition_in_two_files_is_a_redefinition_located_in_the_second(tmp_path):
    lines = _error(tmp_path, {"lib.slang": "float g(float x) { return x; }\n",
                              "main.slang": "import lib;\nfloat g(float y) { return y; }\n"})
    assert lines[0].startswith(f"{tmp_path / 'main.slang'}:2:7: error[E0009]: function 'g' is defined twice")


def test_ir_locations_name_the_file_of_each_function(tmp_path):
    _write(tmp_path, {"lib.slang": "\n\nfloat g(float x) { return x * 2.0; }\n",
                      "main.slang": "import lib;\nfloat f(float x) { return g(x); }\n"})
    main = tmp_path / "main.slang"
    m = compile_slang(main.read_text(), str(main))
    locs = {op.sym_name.data: op.location for op in m.ops if isinstance(op, func.FuncOp)}
    assert locs["g"].filename.data == str(tmp_path / "lib.slang") and locs["g"].line.data == 3
    assert locs["f"].filename.data == str(main) and locs["f"].line.data == 2
