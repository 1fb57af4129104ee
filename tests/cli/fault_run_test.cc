// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Fault injection across whole `mstar run`s of the tiny LLM (real LibTorch plugins, paged KV
// cache, tiers): MSTAR_FAULT makes the Nth plugin call, host allocation or host object fail, for N spread over
// a run; the disk tier's fault layer makes its Nth file operation fail, in a run whose KV pool is
// forced small so that requests are offloaded to disk and read back. Each time the process exits
// normally (0 or 1, never a signal), and every request either completes with exactly the clean
// run's text or fails with an error naming the fault.
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

// Validates a run's JSON against the clean run's: every request done with the same text, or failed
// with an error containing `reason`. Returns how many failed.
int CheckAgainstClean(const test::CommandResult& run, const nlohmann::json& expected,
                      const std::string& reason) {
  EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << run.exit_code << run.err;
  if (run.out.empty()) {  // the model did not load: the reason is on stderr
    EXPECT_NE(run.err.find(reason), std::string::npos) << run.err;
    return 1;
  }
  nlohmann::json outputs = nlohmann::json::parse(run.out)["outputs"];
  EXPECT_EQ(outputs.size(), expected.size());
  int failed = 0;
  for (size_t i = 0; i < outputs.size() && i < expected.size(); ++i) {
    if (outputs[i]["end"] == "done") {
      EXPECT_EQ(outputs[i].value("text", ""), expected[i].value("text", "")) << i;
    } else {
      ++failed;
      EXPECT_NE(outputs[i].value("error", "").find(reason), std::string::npos) << outputs[i].dump();
    }
  }
  return failed;
}

TEST_F(FaultRun, EveryInjectedFaultStaysWithItsRequests) {
  test::CommandResult clean = RunWithFault("");
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  nlohmann::json expected = nlohmann::json::parse(clean.out)["outputs"];
  ASSERT_EQ(expected.size(), 3u);
  int reached = 0;
  for (const char* site : {"plugin_call", "allocation", "host_object"}) {
    for (int nth : {1, 3, 8, 21, 55, 144}) {
      std::string fault = std::string(site) + ":" + std::to_string(nth);
      SCOPED_TRACE(fault);
      reached += CheckAgainstClean(RunWithFault(fault), expected, "injected fault");
    }
  }
  EXPECT_GT(reached, 0);
}

// Four prompts of different lengths, 24 tokens each, with a pool of 4 pages of 16 tokens (one
// request at a time) and the disk tier as the only tier: every eviction writes the victim's pages
// to files and its reload reads them back.
class FileFaultRun : public testing::Test {
 protected:
  test::CommandResult RunWithFileFault(const std::string& faults) {
    std::string prompts = disk_.file("prompts.txt");
    test::WriteFile(prompts,
                    "Hi there\nThe quick brown fox jumps\nA\nPaged attention, offloaded\n");
    std::string faults_set =
        faults.empty() ? "" : " --set 'tiers.disk.config.faults={ " + faults + " }'";
    return test::Run(std::string("'") + MSTAR_CLI + "' run '" + MSTAR_SOURCE_DIR +
                     "/manifests/models/tiny-llm.toml' --prompts '" + prompts +
                     "' --max-tokens 24 --json --set nodes.lm.config.weights='" +
                     test::TinyWeightsDir() + "/tiny-lm' --set tiers.disk.config.directory='" +
                     disk_.file("kv") + "' --set resources.kv.config.num_pages=4" +
                     " --set 'resources.kv.tiers=[\"disk\"]'" + faults_set);
  }
  test::TempDir disk_;
};

TEST_F(FileFaultRun, EveryFailingFileOperationStaysWithItsRequest) {
  test::CommandResult clean = RunWithFileFault("");
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  nlohmann::json report = nlohmann::json::parse(clean.out);
  nlohmann::json expected = report["outputs"];
  ASSERT_EQ(expected.size(), 4u);
  for (const nlohmann::json& o : expected) ASSERT_EQ(o["end"], "done") << o.dump();
  // The run went through the disk: pressure evicted requests (their pages went to files).
  ASSERT_GT(report.value("evictions", 0), 0) << clean.out;

  int reached = 0;
  // The Nth file operation of any kind fails once, then every one from the Nth on (a dead disk);
  // then the first write reports a full disk and the first read a torn block.
  std::vector<std::string> plans;
  for (int nth = 1; nth <= 40; nth += 4)
    plans.push_back("fail_op = \"any\", fail_after = " + std::to_string(nth - 1));
  for (int nth : {1, 5, 20})
    plans.push_back("fail_op = \"any\", fail_count = 0, fail_after = " + std::to_string(nth - 1));
  plans.push_back("fail_op = \"write\", errno = 28");
  plans.push_back("fail_op = \"read\"");
  plans.push_back("truncate_on_write = true");
  for (const std::string& plan : plans) {
    SCOPED_TRACE(plan);
    int failed = CheckAgainstClean(RunWithFileFault(plan), expected, "tier");
    EXPECT_LT(failed, 4);  // a broken disk never takes every request down
    reached += failed;
  }
  EXPECT_GT(reached, 0);
}

}  // namespace
}  // namespace mstar
