"""Slang test runner textures in `//TEST_INPUT` annotations (cli_run.py):

    //TEST_INPUT: Texture2D(size=4, content=one):name=tex
    //TEST_INPUT: set tex = Texture2D(size=4, content=zero)
    //TEST_INPUT: Sampler:name=samp        (binds nothing: frontend/textures.py models one sampler)

    //TEST_INPUT: set params = new Params{Texture2D(size=4, content=one), Sampler}

The last: a global struct of textures (`ParameterBlock<Params>`), its textures in field order;
the kernel's textures named `params_<field>` take them in order (all of them must be used, so
that the order is the fields').

A `size` x `size` texture (mip 0 only) whose every texel component is 1 (`one`) or 0 (`zero`).
Other contents (`chessboard`, `gradient`) are refused with the annotation's location."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_TEXTURE = re.compile(r"^(?:set\s+(?P<set>[A-Za-z_]\w*)\s*=\s*)?Texture2D\((?P<opts>[^)]*)\)\s*(?::(?P<flags>.*))?$")
_SAMPLER = re.compile(r"^(?:set\s+[A-Za-z_]\w*\s*=\s*)?Sampler(?:State)?\s*(?::.*)?$")
CONTENTS = {"one": 1.0, "zero": 0.0}


@dataclass
class InputTexture:
    name: str
    size: int
    content: str
    where: object
    line: str
    out: bool = False

    def texels(self, lanes: int, dtype) -> np.ndarray:
        return np.full((self.size, self.size, lanes), CONTENTS[self.content], dtype)


_GROUP = re.compile(r"^set\s+(?P<name>[A-Za-z_]\w*)\s*=\s*new\s+\w+\s*\{(?P<items>.*)\}\s*$")


@dataclass
class InputTextureGroup:
    name: str
    textures: list[InputTexture]
    where: object
    line: str
    out: bool = False

    def member(self, of: str, kernel_textures: list[str], error) -> InputTexture:
        """The texture of kernel texture `of` (a `name_<field>`), by position."""
        mine = [t for t in kernel_textures if t.startswith(self.name + "_")]
        if len(mine) != len(self.textures):
            raise error(self.where, self.line, f"TEST_INPUT: '{self.name}' lists {len(self.textures)} textures, "
                        f"the kernel uses {len(mine)} ({', '.join(mine)}): cannot tell which is which")
        return self.textures[mine.index(of)]


def _items(text: str) -> list[str]:
    """`a(x, y), b` -> ['a(x, y)', 'b']."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "({[" and 1 or ch in ")}]" and -1 or 0
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [x for x in out if x]


def input_texture(body: str, where, line: str, error) -> InputTexture | InputTextureGroup | None:
    """The annotation `body` as a texture (a Sampler: a InputTexture without a name), or None
    when it is no texture; `error(where, line, message)` makes a located error."""
    if _SAMPLER.match(body):
        return InputTexture("", 0, "", where, line)
    g = _GROUP.match(body)
    if g is not None:
        items = [input_texture(f"set {g.group('name')} = {x}", where, line, error) for x in _items(g.group("items"))]
        if any(x is None or isinstance(x, InputTextureGroup) for x in items):
            raise error(where, line, "TEST_INPUT: 'new S{...}' may list Texture2D(...) and Sampler only")
        return InputTextureGroup(g.group("name"), [x for x in items if x.name], where, line)
    m = _TEXTURE.match(body)
    if m is None:
        return None
    size, content = 0, "zero"
    for part in (p.strip() for p in m.group("opts").split(",")):
        key, _, value = (x.strip() for x in part.partition("="))
        if key == "size" and value.isdigit() and int(value) > 0:
            size = int(value)
        elif key == "content" and value in CONTENTS:
            content = value
        elif key == "content":
            raise error(where, line, f"TEST_INPUT: texture content '{value}' is not supported (known: "
                        f"{', '.join(CONTENTS)})")
        elif part:
            raise error(where, line, f"TEST_INPUT: unknown or bad texture option '{part}' (known: size=N, "
                        "content=one|zero)")
    if not size:
        raise error(where, line, "TEST_INPUT: a Texture2D needs size=N")
    flags = [re.sub(r"^name\s+(?=\w)", "name=", f.strip()) for f in (m.group("flags") or "").split(",") if f.strip()]
    name = m.group("set") or next((f.split("=", 1)[1].strip() for f in flags if f.startswith("name=")), None)
    if not name:
        raise error(where, line, "TEST_INPUT: the texture has no name=NAME to bind it to")
    return InputTexture(name, size, content, where, line)
