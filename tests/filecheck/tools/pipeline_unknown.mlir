// Unknown passes and options: a message naming them, exit code 1, no traceback, no output.
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(canonicalise)' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not diffc-opt %s -p 'cse,canonicalise' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(no-such-pass-at-all)' 2>&1 | filecheck %s --check-prefix=NOHINT
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(canonicalize{bogus=1})' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(arith-add-fastmath{flag=fast})' 2>&1 | filecheck %s --check-prefix=OPTION2
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(expand-math-to-polynomials{terms=many})' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(cse{)' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(cse)' -p cse 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(canonicalise)' 2>/dev/null | filecheck %s --check-prefix=NOOUT --allow-empty

// PASS: error: unknown pass 'canonicalise'; did you mean 'canonicalize'
// PASS-SAME: (diffc-opt --help lists the passes; --load-pass-plugin=FILE.py adds more)
// PASS-NOT: Traceback
// NOHINT: error: unknown pass 'no-such-pass-at-all' (diffc-opt --help lists the passes
// OPTION: error: pass 'canonicalize' has no option 'bogus' (its options: none)
// OPTION-NOT: Traceback
// OPTION2: error: pass 'arith-add-fastmath' has no option 'flag' (its options: flags)
// VALUE: error: pass 'expand-math-to-polynomials': bad option value: {{.*}}expected int
// SYNTAX: error: Error parsing pass pipeline specification:
// SYNTAX: Expected argument name here
// BOTH: error: give either --pass-pipeline or -p/--passes, not both
// NOOUT-NOT: {{.}}

func.func @f() {
  func.return
}
