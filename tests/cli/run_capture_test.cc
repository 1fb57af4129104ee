// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar run --json` reports, per node, what graph capture did: the tiny speech model with both
// nodes publishing capture configurations (tiny_lm's decode, tiny_codec's full windows) captures
// graphs at warmup and replays steps (on CPU builds the recording backend's eager runs over a
// slot's padded rows), and reports none of it with capture off in the runtime config.
// scripts/device_check.sh reads the same fields on a GPU.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "plugins/tiny_codec/tiny_weights.h"
#include "support/test_support.h"

namespace mstar {
namespace {

// A run of the tiny speech model with both nodes' capture on and the runtime's capture on or
// off; extra: more flags. The JSON summary unless extra asks for text (then {"text": stdout}).
nlohmann::json RunSpeech(const test::TempDir& dir, bool capture,
                         const std::string& extra = "--json") {
  const std::string config = dir.file(capture ? "on.toml" : "off.toml");
  std::ofstream(config) << "format = 1\n[capture]\nenabled = " << (capture ? "true" : "false")
                        << "\n";
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, wrongly) on a long chain of + that
  // starts with a literal.
  std::string command = "'";
  command += MSTAR_CLI;
  command += "' --config '" + config + "' run '" + MSTAR_SOURCE_DIR;
  command +=
      "/manifests/models/tiny-speech.toml' --prompt 'Hi there' --requests 2 --max-tokens 24 ";
  command += extra + " --audio '" + dir.file("out.wav") + "' --quiet";
  command += " --set nodes.lm.config.weights='" + test::TinyWeightsDir() + "/tiny-lm'";
  command += " --set nodes.codec.config.weights='" + test::TinyWeightsDir() + "/tiny-codec'";
  command += " --set tiers.disk.config.directory='" + dir.path() + "/kv'";
  command += " --set nodes.lm.config.capture=true --set nodes.codec.config.capture=true";
  test::CommandResult run = test::Run(command);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code != 0) return nlohmann::json::object();
  if (extra != "--json") return nlohmann::json{{"text", run.out}};
  return nlohmann::json::parse(run.out);
}

TEST(RunCapture, TheJsonSaysWhatEachNodeCapturedAndReplayed) {
  test::TempDir dir;
  nlohmann::json on = RunSpeech(dir, true);
  ASSERT_TRUE(on.contains("nodes")) << on.dump();
  EXPECT_EQ(on["completed"], 2);
  for (const char* node : {"lm", "codec"}) {
    SCOPED_TRACE(node);
    const nlohmann::json& n = on["nodes"][node];
    EXPECT_GT(n["captured_graphs"].get<uint64_t>(), 0u) << n.dump();
    EXPECT_EQ(n["failed_captures"].get<uint64_t>(), 0u) << n.dump();
    EXPECT_GT(n["replayed_steps"].get<uint64_t>(), 0u) << n.dump();
    EXPECT_LE(n["replayed_steps"].get<uint64_t>(), n["steps"].get<uint64_t>()) << n.dump();
    EXPECT_EQ(n["region_replays"], 0) << n.dump();
  }
  // Host memory is not cached by a block cache; a CUDA device would be listed here.
  ASSERT_TRUE(on.contains("device_block_caches")) << on.dump();
  EXPECT_TRUE(on["device_block_caches"].is_array());
  EXPECT_TRUE(on["device_block_caches"].empty()) << on["device_block_caches"].dump();
  nlohmann::json off = RunSpeech(dir, false);
  ASSERT_TRUE(off.contains("nodes")) << off.dump();
  EXPECT_EQ(off["completed"], 2);
  for (const char* node : {"lm", "codec"}) {
    SCOPED_TRACE(node);
    EXPECT_EQ(off["nodes"][node]["captured_graphs"], 0);
    EXPECT_EQ(off["nodes"][node]["replayed_steps"], 0);
  }
  // Without --json the summary has a line per node that captured.
  const std::string text = RunSpeech(dir, true, "")["text"].get<std::string>();
  for (const char* node : {"lm", "codec"})
    EXPECT_NE(text.find(std::string("capture: node ") + node + ": "), std::string::npos) << text;
}

// A tiny speech run whose KV pool is too small for its six requests, offloading to a disk tier
// whose first block write is torn: the request that reloads that block is recomputed from its
// prompt after it sent audio. That audio comes from a captured codec whose samples differ in their
// last bits with the batch: the recomputed samples are not mistaken for a different history, and
// every request completes.
TEST(RunCapture, ARequestWhoseBlockWasLostIsRecomputedWithACapturedCodec) {
  test::TempDir dir;
  const std::string prompts = dir.file("prompts.txt");
  std::ofstream(prompts) << "hello there audio\nsecond prompt here\nx\n"
                            "another one a bit longer than others\nshort\nmedium size prompt\n";
  std::string command = "'";
  command += MSTAR_CLI;
  command += "' run '";
  command += MSTAR_SOURCE_DIR;
  command += "/manifests/models/tiny-speech.toml' --prompts '" + prompts + "' --json --quiet";
  command += " --audio '' --set nodes.lm.config.weights='" + test::TinyWeightsDir() + "/tiny-lm'";
  command += " --set nodes.codec.config.weights='" + test::TinyWeightsDir() + "/tiny-codec'";
  command += " --set tiers.disk.config.directory='" + dir.path() + "/kv'";
  command += " --set nodes.codec.config.capture=true --set resources.kv.config.num_pages=24";
  command += " --set 'resources.kv.tiers=[\"disk\"]'";
  command += " --set tiers.disk.config.faults.truncate_on_write=true";
  test::CommandResult result = test::Run(command);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  nlohmann::json run = nlohmann::json::parse(result.out);
  EXPECT_EQ(run["completed"], 6) << run["outputs"].dump();
  EXPECT_EQ(run["recomputes"], 1) << result.err;
  EXPECT_GT(run["evictions"].get<uint64_t>(), 0u);
  // Each eviction made room for a step taken back for capacity.
  EXPECT_GE(run["capacity_waits"].get<uint64_t>(), run["evictions"].get<uint64_t>());
}

}  // namespace
}  // namespace mstar
