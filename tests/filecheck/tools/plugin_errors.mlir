// Plugin files that are missing, define no pass, break on import, or whose pass fails, crashes
// or leaves invalid IR: a message naming the file or pass, exit code 1, no traceback.
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/no_such_plugin.py -p cse 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/empty_plugin.py -p cse 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/broken_plugin.py -p cse 2>&1 | filecheck %s --check-prefix=BROKEN
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/failing_pass_plugin.py -p cse,always-fail 2>&1 | filecheck %s --check-prefix=FAILS
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/crashing_pass_plugin.py -p crash 2>&1 | filecheck %s --check-prefix=CRASH
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/bad_output_plugin.py --pass-pipeline='builtin.module(spoil-prefer,cse)' 2>&1 | filecheck %s --check-prefix=INVALID

// MISSING: error: --load-pass-plugin: no such file '{{.*}}no_such_plugin.py'
// MISSING-NOT: Traceback
// EMPTY: error: --load-pass-plugin: '{{.*}}empty_plugin.py' defines no ModulePass subclass with a name
// BROKEN: error: --load-pass-plugin: loading '{{.*}}broken_plugin.py' failed: RuntimeError: this plugin is broken on purpose
// BROKEN-NOT: Traceback
// FAILS: error: pass 'always-fail' failed: always-fail: refusing this module on purpose
// FAILS-NOT: Traceback
// CRASH: error: pass 'crash' crashed: KeyError: 'missing-key' (set DIFFC_TRACEBACK=1 to see the Python traceback)
// CRASH-NOT: Traceback
// INVALID: plugin_errors.mlir:[[# @LINE + 2]]:1: error: 'func.func' @f: diff.prefer must be "recompute" or "checkpoint", got "sometimes" (in the IR left by pass 'spoil-prefer')
// INVALID-NOT: Traceback
func.func @f() {
  func.return
}
