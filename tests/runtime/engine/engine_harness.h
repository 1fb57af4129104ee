// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Running models through a real Session in tests: manifests from text, plugins from the build
// tree (echo, template, the test kit), outputs collected per request.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "model/model_manifest.h"
#include "support/test_support.h"

namespace mstar::test {

struct Outcome {
  RequestResult result;
  std::string text;                                    // concatenated "text" modality outputs
  std::map<std::string, std::vector<int64_t>> values;  // output name -> every element emitted
  std::map<std::string, std::vector<std::vector<int64_t>>> chunks;  // output name -> each chunk
  // output name -> DTypeName of its chunks' element_type ("" when text bytes or the controller's)
  std::map<std::string, std::string> element_types;
  std::map<std::string, std::vector<float>> audio;  // "audio" outputs read as samples
  int first_chunk = -1;  // of the run's requests, how many had their first chunk before this one
};

struct RunOutput {
  std::vector<Outcome> outcomes;  // in submission order
  ConductorStats stats;
  std::string open_error;  // with tolerate_failures: why the session did not open
};

struct RunOptions {
  std::vector<std::string> overrides;  // --set
  SessionOptions session;
  std::vector<std::string> params;  // TOML lines for every request's parameters
  // Per request (optional): TOML lines for request i's parameters instead of params.
  std::vector<std::vector<std::string>> request_params;
  std::vector<int32_t> priorities;   // per request (optional)
  std::vector<std::string> tenants;  // per request (optional)
  bool together = false;             // submit every request at once (SubmitAll)
  bool one_at_a_time = false;        // submit each request once the one before it has ended
  // Failures to open the session or submit a request are recorded (open_error, a failed
  // outcome) instead of failing the test: for fault injection.
  bool tolerate_failures = false;
  const PluginRegistry* registry = nullptr;  // null: TestRegistry()
  // Called once every request has ended, before the session closes (to read engine state).
  std::function<void(Session&)> before_close;
};

// The walks of a language model whose node "lm" has a "tokens" port: partition "main" prefills
// from the prompt, then a decode loop "gen" of at most max_iterations steps feeds each token back.
// Both walks emit every token as "tokens" (counted) plus extra_edges (TOML inline tables, each
// followed by a comma), e.g. `{ from = "lm.position", emit = "positions" },`.
std::string LmWalks(int max_iterations = 1000, const std::string& extra_edges = "");

// The kit's language-model node "lm" (plugin, by default kit_add: adds 1, stops when a token
// reaches stop_at) with its kit_counter "kv" resource, plus more_resources (labels, each already
// quoted, e.g. `, "pages"`) that the caller declares itself.
std::string KitLmNode(const std::string& more_resources = "", const std::string& plugin = "kit_add",
                      int stop_at = 90);

// A language-model-shaped model over the test kit: prefill then a decode loop of kit_add (adds 1,
// stops at 90) with a kit_counter "kv" resource; emits "tokens" and "positions".
extern const std::string kKitModel;

// kKitModel whose node also holds a kv_paged resource "pages" (1000 pages of 4 tokens, 2 layers)
// that offloads to a kit_memory tier "mem".
extern const std::string kKitKvPagedModel;

// The plugin registry with the build tree's plugins and the test kit.
const PluginRegistry& TestRegistry();

// Parses manifest_text (path "test.toml"); fails the test on diagnostics.
ModelSpec Model(const std::string& manifest_text, const std::vector<std::string>& overrides = {});
ModelSpec ShippedModel(const std::string& name, const std::vector<std::string>& overrides = {});
// The echo model set to echo for a hundred million tokens: its requests end only when cancelled
// or closed.
ModelSpec EndlessEcho();
// A kit_columnar model of max_output_tokens 100 and LmWalks(2) whose first batched forward sleeps
// sleep_us, then (with a gate) waits until the file gate exists: its queue stays busy, and
// requests submitted meanwhile wait.
ModelSpec BusyKitModel(int sleep_us, const std::string& gate = "");

// A one-walk model ("prefill" over node "n", its input "tokens" the prompt) of submodule plugin
// from registry; fails the test on diagnostics.
ModelSpec OneNodeModel(const std::string& plugin, const PluginRegistry& registry);

// count prompts of 1 to max_length lowercase letters, the same for the same seed.
std::vector<std::string> RandomPrompts(int count, int max_length, unsigned seed);

// Host memory the global ledger holds now, once it has come back to `before` or after waiting
// about ten seconds for it (a finished step's tensors go when its thread recycles it, just after
// the requests end).
uint64_t HostMemoryAfterSettling(uint64_t before);

// Request parameters from TOML lines; fails the test when they do not parse.
std::shared_ptr<const ConfigTree> Params(const std::vector<std::string>& lines);

// Opens a session, submits every prompt at once, waits for all of them, closes the session.
RunOutput RunAll(const ModelSpec& model, const std::vector<std::string>& prompts,
                 const RunOptions& options = {});

}  // namespace mstar::test
