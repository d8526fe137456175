"""Phase 3, syntax tree -> checked tree: names resolved, every expression's type in `ty`, the
located errors E0002-E0009 (checker.py; calls in calls.py, overload choice in overloads.py, type
names in type_resolution.py, interfaces and conformance in interfaces.py). Its results for the
lowering are in symbols.py (FuncInfo, Local)."""
