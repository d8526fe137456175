"""Phase 2, tokens -> syntax tree (diffc/frontend/ast.py): the recursive-descent parser
(parser.py) and the loader of `import`ed modules (imports.py).

`parse(text, filename)` is what code outside the front end calls (the runtime reads a module's
generic functions with it)."""

from diffc.frontend.parser.parser import MAX_NESTING, Parser, parse

__all__ = ["MAX_NESTING", "Parser", "parse"]
