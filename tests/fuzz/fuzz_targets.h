// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The parsers fed untrusted input, as fuzz entry points. Each takes arbitrary bytes, must never
// crash, hang or leak, and must either accept the input or report at least one diagnostic.
// Used by the libFuzzer binaries (MSTAR_BUILD_FUZZ) and by fuzz_regression_test, which replays
// the committed corpus and every crash ever found (tests/fuzz/regressions/) in the normal build.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mstar::fuzz {

// A plugin manifest (docs/manifests.md).
void PluginManifest(const uint8_t* data, size_t size);
// A model manifest with graph validation. The first line, when it starts with "#set ", is an
// override (dotted.key=value), so overrides are fuzzed too.
void ModelManifest(const uint8_t* data, size_t size);
// A runtime config (manifests/runtime/*.toml).
void RuntimeConfig(const uint8_t* data, size_t size);
// A kv_paged resident delta, the move log a leader ships to its followers. The first bytes drive
// a leader cache through moves (add, append, truncate, set length, cache insert, offload, reload,
// remove); each delta it takes must replay on a follower to the same state. The rest is applied
// to the follower as a delta from a faulty or hostile leader: it must be applied or refused
// (mstar::sdk::Error), never crash.
void KvResidentDelta(const uint8_t* data, size_t size);
// A .safetensors weights file (the SDK's reader, which plugins load weights with): it must
// either throw mstar::sdk::Error or give tensors whose bytes lie within the file.
void SafetensorsFile(const uint8_t* data, size_t size);

}  // namespace mstar::fuzz
