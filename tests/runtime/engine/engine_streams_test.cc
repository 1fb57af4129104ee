// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's streams under load, watched through StreamLogBackend (installed for host devices,
// so the host's streams are told apart): a kit_add walk with a kv_paged resource too small for all
// requests at once, offloading through tier_host, beside the kit_counter "kv" (which synchronizes
// every stream it is handed, so the log shows which stream each of its hooks got). Every forward
// waits for the plan stream, and for the copy stream when an offload or reload used it since;
// resources plan on the plan stream and commit on exec;
// every offload and reload waits for the exec stream and runs on the copy stream; the exec stream
// is finished before the host reads outputs; a stream that cannot wait fails the steps' requests
// with the reason.
#include <gtest/gtest.h>

#include "runtime/engine/engine_harness.h"
#include "runtime/engine/stream_log_backend.h"

namespace mstar {
namespace {

using test::StreamLogBackend;
using test::StreamLogEntry;
using test::StreamLogScope;
using test::StreamOp;

struct EngineStreamHandles {
  const void* exec = nullptr;
  const void* plan = nullptr;
  const void* copy = nullptr;
  uint64_t forwards = 0;
};

// Runs six prompts at once through the kv_paged model with 24 pages and tier_host, its node
// running plugin, reading the engine's host streams before the session closes.
test::RunOutput RunUnderPressure(EngineStreamHandles* handles,
                                 const std::string& plugin = "kit_add") {
  test::RunOptions options;
  options.together = true;
  options.before_close = [handles](Session& session) {
    DeviceStreams* streams = session.engine().streams_on(DLDevice{kDLCPU, 0});
    ASSERT_NE(streams, nullptr);
    handles->exec = streams->exec()->native;
    handles->plan = streams->plan()->native;
    handles->copy = streams->copy()->native;
    handles->forwards = session.engine().timings().forward_calls;
  };
  return test::RunAll(test::Model(test::kKitKvPagedModel, {"resources.pages.config.num_pages=24",
                                                           "tiers.mem.plugin=\"tier_host\"",
                                                           "nodes.lm.plugin=\"" + plugin + "\""}),
                      {"AB", "C", "DEF", "G", "HI", "JKL"}, options);
}

// Per request (kit_add) and in columnar steps of a cohort (kit_columnar).
class EngineStreams : public testing::TestWithParam<std::string> {};

TEST_P(EngineStreams, ForwardsOffloadsAndReloadsAreOrderedAcrossTheThreeStreams) {
  StreamLogBackend backend;
  StreamLogScope scope(backend);
  EngineStreamHandles h;
  test::RunOutput run = RunUnderPressure(&h, GetParam());
  for (const test::Outcome& o : run.outcomes) {
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
  }
  ASSERT_GT(run.stats.evictions, 0u);
  ASSERT_GT(h.forwards, 0u);
  if (GetParam() == "kit_columnar") {
    EXPECT_GT(run.stats.cohort_batches, 0u);
  }

  uint64_t exec_after_plan = 0, exec_after_copy = 0, copy_after_exec = 0;
  uint64_t moves_on_copy = 0, syncs_on_plan = 0;
  bool copy_stream_waited = false, moved_before_waiting = false;
  int exec_syncs_since_wait = 0;
  bool copy_work_unwaited = false;  // a copy-lane hook ran after exec's last wait for copy
  for (const StreamLogEntry& e : backend.log()) {
    if (e.op == StreamOp::kWait) {
      const void* source = backend.recorded_on(e.event);
      if (e.stream == h.exec && source == h.plan) ++exec_after_plan;
      if (e.stream == h.exec && source == h.copy) {
        ++exec_after_copy;
        copy_work_unwaited = false;
      }
      if (e.stream == h.copy && source == h.exec) {
        ++copy_after_exec;
        copy_stream_waited = true;
      }
    }
    // kit_counter's offloads and reloads (its syncs), and any copy kv_paged makes there.
    if ((e.op == StreamOp::kSync || e.op == StreamOp::kCopy) && e.stream == h.copy) {
      ++moves_on_copy;
      copy_work_unwaited = true;
      if (!copy_stream_waited) moved_before_waiting = true;
    }
    if (e.op == StreamOp::kSync && e.stream == h.plan) ++syncs_on_plan;
    if (e.op == StreamOp::kWait && e.stream == h.exec) exec_syncs_since_wait = 0;
    if (e.op == StreamOp::kSync && e.stream == h.exec) ++exec_syncs_since_wait;
  }
  // Each forward waited once for its step's plans (node and resources share the host's
  // streams); for the copy lane only when something was offloaded or reloaded since.
  EXPECT_EQ(exec_after_plan, h.forwards);
  EXPECT_GT(exec_after_copy, 0u);
  EXPECT_LT(exec_after_copy, h.forwards);
  EXPECT_FALSE(copy_work_unwaited) << "the last offload or reload was not waited for";
  EXPECT_GT(syncs_on_plan, 0u);
  // Offloads and reloads ran on the copy stream, never before it waited for exec. Each evicted
  // request was offloaded from the resource that was short (kv_paged's pages; kit_counter's
  // capacity is ample), which waited once to offload it and once more to bring it back.
  EXPECT_GT(moves_on_copy, 0u);
  EXPECT_FALSE(moved_before_waiting);
  EXPECT_GE(copy_after_exec, 2 * run.stats.evictions);
  // After the last forward: kit_counter's commit on exec, then the engine finished the exec
  // stream before the step's outputs went to the host.
  EXPECT_EQ(exec_syncs_since_wait, 2);
}

TEST_P(EngineStreams, AStreamThatCannotWaitFailsTheStepsRequestsWithTheReason) {
  StreamLogBackend backend;
  backend.fail_waits = true;
  StreamLogScope scope(backend);
  EngineStreamHandles h;
  test::RunOutput run = RunUnderPressure(&h, GetParam());
  ASSERT_EQ(run.outcomes.size(), 6u);
  for (const test::Outcome& o : run.outcomes) {
    EXPECT_EQ(o.result.end, RequestEnd::kFailed);
    EXPECT_NE(o.result.error.find("the stream cannot wait"), std::string::npos) << o.result.error;
  }
  EXPECT_EQ(h.forwards, 0u);  // no forward ran unordered
}

INSTANTIATE_TEST_SUITE_P(Plugins, EngineStreams, testing::Values("kit_add", "kit_columnar"));

}  // namespace
}  // namespace mstar
