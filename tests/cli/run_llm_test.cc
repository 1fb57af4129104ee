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

TEST(RunLlm, OneAtATimeALaterRequestReusesTheEarlierOnesPrefix) {
  test::TempDir dir;
  // 71 bytes: 4 full pages of 16 before the last token.
  const std::string prompt =
      "the same long prompt shared by both requests, long enough to fill pages";
  test::WriteFile(dir.file("prompts.txt"), prompt + "\n" + prompt + "\n");
  std::string command = "'";
  command += MSTAR_CLI;
  command += "' run '";
  command += MSTAR_SOURCE_DIR;
  command += "/manifests/models/tiny-llm.toml' --prompts '" + dir.file("prompts.txt") + "'";
  command += " --max-tokens 8 --one-at-a-time --json --quiet";
  command += " --set nodes.lm.config.weights='" + test::TinyWeightsDir() + "/tiny-lm'";
  command += " --set tiers.disk.config.directory='" + dir.path() + "/kv'";
  test::CommandResult run = test::Run(command);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json summary = nlohmann::json::parse(run.out);
  EXPECT_EQ(summary["counters"]["kv_paged/kv.prefix.hit_tokens"], 64) << summary["counters"];
  EXPECT_EQ(summary["counters"]["kv_paged/kv.prefix.prompt_tokens"], 2 * prompt.size());
  ASSERT_EQ(summary["outputs"].size(), 2u);
  const nlohmann::json& first = summary["outputs"][0]["token_ids"];
  ASSERT_EQ(first.size(), 8u) << summary["outputs"].dump();
  EXPECT_EQ(first, summary["outputs"][1]["token_ids"]);
}

}  // namespace
}  // namespace mstar
