// Only 'builtin.module(...)' pipelines: nesting on func.func or anything else is refused with a
// clear message and exit code 1.
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(func.func(cse))' 2>&1 | filecheck %s --check-prefix=FUNC
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(canonicalize,func.func(cse,canonicalize))' 2>&1 | filecheck %s --check-prefix=LATER
// RUN: not diffc-opt %s --pass-pipeline='func.func(cse)' 2>&1 | filecheck %s --check-prefix=TOP
// RUN: not diffc-opt %s --pass-pipeline='cse' 2>&1 | filecheck %s --check-prefix=TOP
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=TOP

// FUNC: error: --pass-pipeline: only passes on 'builtin.module' are supported; nested pipelines such as 'func.func(...' are not (diffc passes run on the whole module: write 'builtin.module(pass)')
// FUNC-NOT: Traceback
// LATER: nested pipelines such as 'canonicalize,func.func(...' are not
// TOP: error: --pass-pipeline must have the form 'builtin.module(pass1,pass2{opt=value})', got
// TOP-NOT: Traceback

func.func @f() {
  func.return
}
