// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Fault injection across whole `mstar run`s of the tiny LLM (real LibTorch plugins, paged KV
// cache, tiers): MSTAR_FAULT makes the Nth plugin call or host allocation fail, for N spread over
// a run. Each time the process exits normally (0 or 1, never a signal), and every request either
// completes with exactly the clean run's text or fails with an error naming the injected fault.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plugins/tiny_codec/tiny_weights.h"
#include "support/test_support.h"

namespace mstar {
namespace {

class FaultRun : public testing::Test {
 protected:
  test::CommandResult RunWithFault(const std::string& fault) {
    std::string env = fault.empty() ? "" : "MSTAR_FAULT=" + fault + " ";
    return test::Run(env + "'" + MSTAR_CLI + "' run '" + MSTAR_SOURCE_DIR +
                     "/manifests/models/tiny-llm.toml' --prompt 'Hi there' --requests 3 "
                     "--max-tokens 6 --json --set nodes.lm.config.weights='" +
                     test::TinyWeightsDir() + "/tiny-lm' --set tiers.disk.config.directory='" +
                     disk_.path() + "'");
  }
  test::TempDir disk_;
};

TEST_F(FaultRun, EveryInjectedFaultStaysWithItsRequests) {
  test::CommandResult clean = RunWithFault("");
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  nlohmann::json expected = nlohmann::json::parse(clean.out)["outputs"];
  ASSERT_EQ(expected.size(), 3u);
  int reached = 0;
  for (const char* site : {"plugin_call", "allocation"}) {
    for (int nth : {1, 3, 8, 21, 55, 144}) {
      std::string fault = std::string(site) + ":" + std::to_string(nth);
      SCOPED_TRACE(fault);
      test::CommandResult run = RunWithFault(fault);
      ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.exit_code << run.err;
      if (run.out.empty()) {  // the model did not load: the reason is on stderr
        EXPECT_NE(run.err.find("injected fault"), std::string::npos) << run.err;
        ++reached;
        continue;
      }
      nlohmann::json outputs = nlohmann::json::parse(run.out)["outputs"];
      ASSERT_EQ(outputs.size(), 3u);
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i]["end"] == "done") {
          EXPECT_EQ(outputs[i].value("text", ""), expected[i].value("text", "")) << i;
        } else {
          ++reached;
          EXPECT_NE(outputs[i].value("error", "").find("injected fault"), std::string::npos)
              << outputs[i].dump();
        }
      }
    }
  }
  EXPECT_GT(reached, 0);
}

}  // namespace
}  // namespace mstar
