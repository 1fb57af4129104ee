// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged under the engine: a kit_add language-model walk whose node holds a kv_paged resource
// ("pages", offloading to a kit_memory tier) beside the kit_counter "kv" that kit_add reads. With
// a pool too small for every request at once the engine offloads and reloads requests through
// kv_paged, and every output matches a run with a pool large enough for all; a request that can
// never fit fails with kv_paged's reason while the others finish. The same holds with the
// tier_host plugin as the tier.
#include <gtest/gtest.h>

#include "core/metrics.h"
#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;

const std::string& kKitKv = test::kKitKvPagedModel;

std::vector<std::string> Prompts() {
  return {"AB", "C", "DEF", "G", "HI", "JKL"};
}

TEST(KvPagedEngine, OffloadAndReloadUnderPressureLeaveOutputsUnchanged) {
  test::RunOutput clean = RunAll(Model(kKitKv), Prompts());
  for (const test::Outcome& o : clean.outcomes) ASSERT_EQ(o.result.end, RequestEnd::kDone);
  EXPECT_EQ(clean.stats.evictions, 0u);
  // The requests end holding 238 tokens (at most 78 each): about 65 pages of 4 tokens. 24 pages
  // fit any one request but not all of them.
  for (const char* policy : {"lru", "priority"}) {
    test::RunOptions options;
    options.together = true;  // one by one, early requests could finish before late ones arrive
    options.session.conductor.eviction =
        std::string(policy) == "lru" ? EvictionPolicy::kLru : EvictionPolicy::kPriority;
    test::RunOutput tight =
        RunAll(Model(kKitKv, {"resources.pages.config.num_pages=24"}), Prompts(), options);
    for (size_t i = 0; i < tight.outcomes.size(); ++i) {
      ASSERT_EQ(tight.outcomes[i].result.end, RequestEnd::kDone)
          << policy << " " << i << ": " << tight.outcomes[i].result.error;
      EXPECT_EQ(tight.outcomes[i].values, clean.outcomes[i].values) << policy << " " << i + 1;
    }
    EXPECT_GT(tight.stats.evictions, 0u) << policy;
  }
}

// A tenant's requests share prefix-cache pages with each other and with no other tenant: one
// after another, the same 9-byte prompt (2 full pages of 4 before its last token) hits 8 tokens
// only when the request before it with that prompt was the same tenant's.
TEST(KvPagedEngine, APrefixIsSharedOnlyWithinATenant) {
  const std::string hits = "kv_paged/pages.prefix.hit_tokens";
  auto run = [&](const std::vector<std::string>& tenants) {
    test::RunOptions options;
    options.one_at_a_time = true;
    options.tenants = tenants;
    const int64_t before = Metrics::Global().Counter(hits);
    test::RunOutput out = RunAll(Model(kKitKv, {"nodes.lm.config.token_input=tokens"}),
                                 std::vector<std::string>(tenants.size(), "ABCDEFGHI"), options);
    for (const test::Outcome& o : out.outcomes) EXPECT_EQ(o.result.end, RequestEnd::kDone);
    for (const test::Outcome& o : out.outcomes) EXPECT_EQ(o.values, out.outcomes[0].values);
    return Metrics::Global().Counter(hits) - before;
  };
  EXPECT_EQ(run({"", ""}), 8);  // no tenant: one shared cache
  EXPECT_EQ(run({"acme", "acme"}), 8);
  EXPECT_EQ(run({"acme", "globex"}), 0);
  EXPECT_EQ(run({"acme", "", "globex", "acme"}), 8);  // the fourth finds the first's pages
}

// Runs the prompts together on a pool of 24 pages with more overrides, and expects every request
// to finish with the outputs of an unconstrained run, some of them offloaded on the way.
void ExpectOffloadsLeaveOutputsUnchanged(const std::string& override) {
  test::RunOutput clean = RunAll(Model(kKitKv), Prompts());
  test::RunOptions together;
  together.together = true;  // one by one, early requests could finish before late ones arrive
  test::RunOutput tight =
      RunAll(Model(kKitKv, {"resources.pages.config.num_pages=24", override}), Prompts(), together);
  for (size_t i = 0; i < tight.outcomes.size(); ++i) {
    ASSERT_EQ(tight.outcomes[i].result.end, RequestEnd::kDone)
        << i << ": " << tight.outcomes[i].result.error;
    EXPECT_EQ(tight.outcomes[i].values, clean.outcomes[i].values) << i + 1;
  }
  EXPECT_GT(tight.stats.evictions, 0u);
}

TEST(KvPagedEngine, OffloadsThroughTheHostTier) {
  ExpectOffloadsLeaveOutputsUnchanged("tiers.mem.plugin=\"tier_host\"");
}

TEST(KvPagedEngine, AResourceThatIsNotEvictableStaysWhenItsNeighbourIsOffloaded) {
  // kv_paged offloads requests; the node's other resource, kit_counter, does not declare
  // EVICTABLE (and fails a request it is made to offload), so its counts stay as they are.
  ExpectOffloadsLeaveOutputsUnchanged("resources.kv.config.evictable=false");
}

TEST(KvPagedEngine, ARequestLargerThanThePoolFailsAlone) {
  test::RunOutput clean = RunAll(Model(kKitKv), Prompts());
  // 8 pages hold 32 tokens: "C" (24 tokens in the end) and "G" (20) fit, the others never do.
  test::RunOutput run = RunAll(Model(kKitKv, {"resources.pages.config.num_pages=8"}), Prompts());
  for (size_t i = 0; i < run.outcomes.size(); ++i) {
    const test::Outcome& o = run.outcomes[i];
    if (Prompts()[i] == "C" || Prompts()[i] == "G") {
      ASSERT_EQ(o.result.end, RequestEnd::kDone) << i << ": " << o.result.error;
      EXPECT_EQ(o.values, clean.outcomes[i].values) << i;
    } else {
      ASSERT_EQ(o.result.end, RequestEnd::kFailed) << i;
      EXPECT_NE(o.result.error.find("the pool has 8 pages"), std::string::npos) << o.result.error;
    }
  }
}

}  // namespace
}  // namespace mstar
