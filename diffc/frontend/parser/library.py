"""Slang modules diffc ships, found by `import` after the program's own folders (imports.py):
`import slangpy;` reads diffc/slangpy/slangpy.slang, SlangPy's tensor types (docs/frontend.md,
"SlangPy programs")."""

from __future__ import annotations

import os

# (a path, not an import: the front end does not depend on the Python package beside it)
LIBRARY_DIRS = (os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "slangpy"),)

# Names of SlangPy's Slang library that diffc's does not provide, refused where a program uses them
# as `Name::member` (parser.py), rather than as an unknown name.
REFUSED_LIBRARY_NAMES: dict[str, str] = {}
