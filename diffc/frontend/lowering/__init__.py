"""Phase 4, checked tree -> IR (docs/architecture.md): functions and statements (lower.py),
expressions (lower_expr.py), calls (lower_calls.py), intrinsics (lower_builtins.py), and the
checks run on the lowered IR (derivative_checks.py)."""
