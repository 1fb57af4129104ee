// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A libFuzzer binary for one target of fuzz_targets.h, chosen at compile time (MSTAR_FUZZ_TARGET).
#include <cstddef>
#include <cstdint>

#include "core/logging.h"
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  mstar::Log().set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mstar::fuzz::MSTAR_FUZZ_TARGET(data, size);
  return 0;
}
