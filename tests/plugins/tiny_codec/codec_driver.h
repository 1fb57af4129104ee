// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CodecDriver: one tiny_codec instance, created from the real plugin library through the plugin
// registry, driven through the C ABI the way the engine drives it (prepare_inputs per request,
// then one forward or forward_batched per step). For the codec tests.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "plugin/instance.h"
#include "plugin/registry.h"

namespace mstar::test {

// The registry with the build tree's plugins (tiny_codec among them).
const PluginRegistry& CodecRegistry();

// Creates a tiny_codec instance with the given config (TOML text); the error when it fails.
Result<std::unique_ptr<PluginInstance>> MakeCodec(const std::string& config_toml);

class CodecDriver {
 public:
  // A codec over the tiny weights, fed by a stream with this stride; `extra` is more TOML config.
  explicit CodecDriver(int64_t stride, const std::string& extra = "");

  // One step: request ids and their chunks. batched: one forward_batched over all of them (the
  // plugin provides it); otherwise one forward per request. final: the chunks are their streams'
  // last (MSTAR_REQUEST_FINAL_CHUNK). Returns each request's "pcm" output; a failing status fails
  // the test.
  std::vector<std::vector<float>> Step(
      const std::vector<std::pair<uint64_t, std::vector<int64_t>>>& chunks, bool batched,
      bool final = false);
  // One step over all the chunks (forward for one, forward_batched for more); its status.
  Status TryStep(const std::vector<std::pair<uint64_t, std::vector<int64_t>>>& chunks,
                 std::vector<std::vector<float>>* pcm, bool final = false);
  void Cleanup(uint64_t request_id);

  PluginInstance& instance() { return *instance_; }

 private:
  std::unique_ptr<PluginInstance> instance_;
};

}  // namespace mstar::test
