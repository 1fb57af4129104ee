// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// `mstar run` of the tiny LLM (real LibTorch plugins, kv_paged): with --one-at-a-time each
// request starts once the one before it has ended, so a later request with the same prompt finds
// the earlier one's full pages in the prefix cache (the run's counters say how many tokens) and
// decodes the same token ids; the counters name the resource instance.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plugins/tiny_codec/tiny_weights.h"
#include "support/test_support.h"

namespace mstar {
namespace {

// `mstar run` of the tiny LLM with extra flags (the weights made by the build).
std::string TinyLlmRun(const test::TempDir& dir, const std::string& flags) {
  std::string command = "'";
  command += MSTAR_CLI;
  command += "' run '";
  command += MSTAR_SOURCE_DIR;
  command += "/manifests/models/tiny-llm.toml' " + flags;
  command += " --set nodes.lm.config.weights='" + test::TinyWeightsDir() + "/tiny-lm'";
  command += " --set tiers.disk.config.directory='" + dir.path() + "/kv'";
  return command;
}

TEST(RunLlm, OneAtATimeALaterRequestReusesTheEarlierOnesPrefix) {
  test::TempDir dir;
  // 71 bytes: 4 full pages of 16 before the last token.
  const std::string prompt =
      "the same long prompt shared by both requests, long enough to fill pages";
  test::WriteFile(dir.file("prompts.txt"), prompt + "\n" + prompt + "\n");
  test::CommandResult run =
      test::Run(TinyLlmRun(dir, "--prompts '" + dir.file("prompts.txt") +
                                    "' --max-tokens 8 --one-at-a-time --json --quiet"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json summary = nlohmann::json::parse(run.out);
  EXPECT_EQ(summary["counters"]["kv_paged/kv.prefix.hit_tokens"], 64) << summary["counters"];
  EXPECT_EQ(summary["counters"]["kv_paged/kv.prefix.prompt_tokens"], 2 * prompt.size());
  ASSERT_EQ(summary["outputs"].size(), 2u);
  const nlohmann::json& first = summary["outputs"][0]["token_ids"];
  ASSERT_EQ(first.size(), 8u) << summary["outputs"].dump();
  EXPECT_EQ(first, summary["outputs"][1]["token_ids"]);
}

// A request parameter the plugin reads with the wrong type fails the request naming the flag
// that gave it, --param (not --set, the model manifest's overrides).
TEST(RunLlm, ARequestParameterOfTheWrongTypeIsLocatedAtParam) {
  test::TempDir dir;
  test::CommandResult run = test::Run(
      TinyLlmRun(dir, "--prompt hi --max-tokens 2 --quiet --param 'temperature=\"hot\"'"));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("--param: temperature"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("--set"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace mstar
