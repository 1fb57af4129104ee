// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A plugin's dependency that references a symbol no library defines and never calls it, as
// some CUDA stacks' libraries do: fault_lazy_dependency links it, and the host loads that
// plugin with lazy binding (R15 of docs/plugin-abi.md).
extern "C" void mstar_test_symbol_defined_nowhere(void);

extern "C" __attribute__((visibility("default"))) void mstar_test_lazy_dependency(
    int call_the_missing_symbol) {
  if (call_the_missing_symbol != 0) mstar_test_symbol_defined_nowhere();
}
