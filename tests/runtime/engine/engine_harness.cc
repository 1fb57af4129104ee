// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "runtime/engine/engine_harness.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "config/toml_reader.h"
#include "engine/audio_samples.h"
#include "host/memory_ledger.h"
#include "host/tensor_objects.h"

namespace mstar::test {

std::string LmWalks(int max_iterations, const std::string& extra_edges) {
  std::string emits =
      "  { from = \"lm.tokens\", emit = \"tokens\", modality = \"tokens\", "
      "counts_tokens = true },\n" +
      (extra_edges.empty() ? "" : "  " + extra_edges + "\n");
  return R"(
[partitions.main]
initial = "prefill"
transitions = { prefill = "decode" }
[walks.prefill]
partition = "main"
run = "lm"
inputs = { "lm.tokens" = "request.prompt" }
edges = [
  { from = "lm.tokens", persist = "last" },
)" + emits +
         R"(]
[walks.decode]
partition = "main"
run = { loop = "gen", max_iterations = )" +
         std::to_string(max_iterations) + R"(, body = "lm" }
inputs = { "lm.tokens" = "persisted.last" }
edges = [
  { from = "lm.tokens", to = "lm.tokens" },
)" + emits +
         "]\n";
}

std::string KitLmNode(const std::string& more_resources, const std::string& plugin, int stop_at) {
  return R"(
[nodes.lm]
plugin = ")" +
         plugin + R"("
resources = ["kv")" +
         more_resources + R"(]
[nodes.lm.config]
add = 1
stop_at = )" +
         std::to_string(stop_at) + R"(
[resources.kv]
plugin = "kit_counter"
[resources.kv.config]
capacity = 100000
)";
}

// A language-model-shaped walk over kit_add with a kit_counter "kv" resource: every step adds its
// tokens to the request's count, and emits the count it saw as "position".
const std::string kKitModel = R"(
format = 1
[model]
name = "kit"
max_output_tokens = 100000
)" + KitLmNode() + LmWalks(1000, "{ from = \"lm.position\", emit = \"positions\" },");

const std::string kKitKvPagedModel = R"(
format = 1
[model]
name = "kit_kv"
max_output_tokens = 100000
)" + KitLmNode(", \"pages\"") + R"(
[resources.pages]
plugin = "kv_paged"
tiers = ["mem"]
[resources.pages.config]
page_size = 4
num_pages = 1000
layers = 2
kv_heads = 1
head_dim = 4
[tiers.mem]
plugin = "kit_memory"
)" + LmWalks(1000, "{ from = \"lm.position\", emit = \"positions\" },");

const PluginRegistry& TestRegistry() {
  static const PluginRegistry registry =
      LoadOnly({std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins", TestPluginDir("kit")});
  return registry;
}

ModelSpec Model(const std::string& manifest_text, const std::vector<std::string>& overrides) {
  ModelParse parse = ParseModelManifestText(manifest_text, "test.toml", overrides, &TestRegistry());
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  return parse.model ? *parse.model : ModelSpec{};
}

ModelSpec OneNodeModel(const std::string& plugin, const PluginRegistry& registry) {
  const std::string text = R"(
format = 1
[model]
name = "one_node"
[nodes.n]
plugin = ")" + plugin + R"("
[partitions.main]
initial = "prefill"
[walks.prefill]
partition = "main"
run = "n"
inputs = { "n.tokens" = "request.prompt" }
)";
  ModelParse parse = ParseModelManifestText(text, "one_node.toml", {}, &registry);
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  return parse.model ? *parse.model : ModelSpec{};
}

ModelSpec ShippedModel(const std::string& name, const std::vector<std::string>& overrides) {
  ModelParse parse =
      ParseModelManifestFile(std::string(MSTAR_SOURCE_DIR) + "/manifests/models/" + name + ".toml",
                             overrides, &TestRegistry());
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  return parse.model ? *parse.model : ModelSpec{};
}

ModelSpec EndlessEcho() {
  return ShippedModel(
      "echo", {"nodes.echo.config.repeat=1000000", "walks.decode.run.max_iterations=100000000",
               "model.max_output_tokens=100000000"});
}

ModelSpec BusyKitModel(int sleep_us, const std::string& gate) {
  return Model(R"(
format = 1
[model]
name = "busy"
max_output_tokens = 100
[nodes.lm]
plugin = "kit_columnar"
[nodes.lm.config]
first_batched_sleep_us = )" +
               std::to_string(sleep_us) + "\nfirst_batched_gate = \"" + gate + "\"\n" + LmWalks(2));
}

std::vector<std::string> RandomPrompts(int count, int max_length, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<std::string> prompts;
  for (int i = 0; i < count; ++i) {
    std::string prompt;
    int length = 1 + static_cast<int>(random() % static_cast<unsigned>(max_length));
    for (int k = 0; k < length; ++k) prompt += static_cast<char>('a' + random() % 26);
    prompts.push_back(prompt);
  }
  return prompts;
}

uint64_t HostMemoryAfterSettling(uint64_t before) {
  const DLDevice cpu{kDLCPU, 0};
  for (int i = 0; i < 1000 && MemoryLedger::Global().Used(cpu) != before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return MemoryLedger::Global().Used(cpu);
}

std::shared_ptr<const ConfigTree> Params(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  Diagnostics problems;
  std::optional<toml::table> table = ParseTomlText(text, "params", &problems);
  EXPECT_TRUE(table.has_value()) << text;
  return std::make_shared<ConfigTree>(table ? std::move(*table) : toml::table{}, "params", "");
}

RunOutput RunAll(const ModelSpec& model, const std::vector<std::string>& prompts,
                 const RunOptions& options) {
  RunOutput out;
  out.outcomes.resize(prompts.size());
  const PluginRegistry& registry = options.registry ? *options.registry : TestRegistry();
  Result<std::unique_ptr<Session>> session = Session::Open(model, registry, options.session);
  if (!session.ok()) {
    out.open_error = session.status().ToString();
    EXPECT_TRUE(options.tolerate_failures) << out.open_error;
    return out;
  }
  auto parse_params = [](const std::vector<std::string>& lines) { return Params(lines); };
  auto params = parse_params(options.params);
  std::mutex mutex;
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<SubmitSpec> specs;
  std::vector<uint64_t> sequences(prompts.size());  // each stream's next chunk's
  int firsts = 0;                                   // requests that had a chunk
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto stream = std::make_shared<RequestStream>(i + 1);
    stream->SetCallbacks(
        [&, i](const OutputChunk& chunk) {
          std::lock_guard<std::mutex> lock(mutex);
          EXPECT_EQ(chunk.sequence, sequences[i]++) << "request " << i + 1;
          Outcome& o = out.outcomes[i];
          if (o.first_chunk < 0) o.first_chunk = firsts++;
          if (chunk.modality == "text") o.text.append(chunk.bytes.begin(), chunk.bytes.end());
          auto& all = o.values[chunk.name];
          all.insert(all.end(), chunk.values.begin(), chunk.values.end());
          o.chunks[chunk.name].emplace_back(chunk.values.begin(), chunk.values.end());
          o.element_types[chunk.name] =
              chunk.element_type.bits == 0 ? "" : DTypeName(chunk.element_type);
          if (chunk.modality == "audio") {
            Status read = AppendAudioSamples(chunk.element_type, chunk.bytes.data(),
                                             chunk.bytes.size(), &o.audio[chunk.name]);
            EXPECT_TRUE(read.ok()) << read.message();
          }
        },
        nullptr);
    SubmitSpec spec;
    spec.prompt = prompts[i];
    spec.id = i + 1;
    spec.params =
        i < options.request_params.size() ? parse_params(options.request_params[i]) : params;
    spec.stream = stream;
    if (i < options.priorities.size()) spec.priority = options.priorities[i];
    if (i < options.tenants.size()) spec.tenant = options.tenants[i];
    specs.push_back(std::move(spec));
    streams.push_back(stream);
  }
  std::vector<Result<std::shared_ptr<RequestStream>>> submitted;
  if (options.together) {
    submitted = (*session)->SubmitAll(std::move(specs));
  } else {
    for (size_t i = 0; i < specs.size(); ++i) {
      submitted.push_back((*session)->Submit(std::move(specs[i])));
      if (options.one_at_a_time && submitted.back().ok()) streams[i]->Wait();
    }
  }
  std::vector<bool> waiting(streams.size(), true);
  for (size_t i = 0; i < submitted.size(); ++i) {
    if (submitted[i].ok()) continue;
    EXPECT_TRUE(options.tolerate_failures) << submitted[i].status().ToString();
    out.outcomes[i].result.end = RequestEnd::kFailed;
    out.outcomes[i].result.error = submitted[i].status().ToString();
    waiting[i] = false;
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    if (waiting[i]) out.outcomes[i].result = streams[i]->Wait();
  }
  out.stats = (*session)->stats();
  if (options.before_close) options.before_close(**session);
  (*session)->Close();
  return out;
}

}  // namespace mstar::test
