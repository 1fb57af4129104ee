// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged's step protocol through the real plugin: the plan view contract, admission outcomes
// (ready, not ready for capacity, unservable), rollback of failed and aborted steps, and the
// allocator's invariants under random operation sequences.
#include <algorithm>
#include <random>
#include <set>

#include "config/toml_reader.h"
#include "kv_fixture.h"
#include "plugin/step_arrays.h"

namespace mstar::kvtest {
namespace {

const char* kSmall = "page_size = 4\nnum_pages = 16\nlayers = 2\nkv_heads = 1\nhead_dim = 2\n";

using PlanView = KvTest;

TEST_F(PlanView, TensorsFollowTheContract) {
  auto kv = MakeKv(kSmall);
  FakeRequest a(1), b(2);
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&a, &b}, {6, 3}), (std::vector<uint32_t>{0, 0}));
  const mstar_tensor_map& v = *last_view_;
  const mstar_tensor_t* pool = Get(v, "kv_pool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(std::vector<int64_t>(pool->dl.shape, pool->dl.shape + pool->dl.ndim),
            (std::vector<int64_t>{16, 2, 2, 4, 1, 2}));  // page-major
  EXPECT_EQ(pool->dl.dtype.code, kDLFloat);
  EXPECT_EQ(pool->dl.dtype.bits, 32);
  const mstar_tensor_t* table = Get(v, "block_table");
  ASSERT_EQ(table->dl.ndim, 2);
  EXPECT_EQ(table->dl.shape[0], 2);
  EXPECT_EQ(table->dl.shape[1], 2);
  std::vector<int32_t> t = I32(v, "block_table");
  int32_t a0 = t[0], a1 = t[1], b0 = t[2];
  EXPECT_EQ(t[3], -1);
  EXPECT_EQ(std::set<int32_t>({a0, a1, b0}).size(), 3u);
  EXPECT_EQ(I32(v, "context_lens"), (std::vector<int32_t>{6, 3}));
  EXPECT_EQ(I32(v, "query_start"), (std::vector<int32_t>{0, 6, 9}));
  EXPECT_EQ(I32(v, "cached"), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(I64(v, "positions"), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0, 1, 2}));
  std::vector<int64_t> expect_slots = {a0 * 4,     a0 * 4 + 1, a0 * 4 + 2, a0 * 4 + 3, a1 * 4,
                                       a1 * 4 + 1, b0 * 4,     b0 * 4 + 1, b0 * 4 + 2};
  EXPECT_EQ(I64(v, "slot_mapping"), expect_slots);

  // The next step continues where the last left off; B crosses into a new page.
  ASSERT_EQ(Step(kv, {&a, &b}, {1, 2}), (std::vector<uint32_t>{0, 0}));
  const mstar_tensor_map& w = *last_view_;
  std::vector<int32_t> t2 = I32(w, "block_table");
  EXPECT_EQ(t2[0], a0);
  EXPECT_EQ(t2[1], a1);
  EXPECT_EQ(t2[2], b0);
  int32_t b1 = t2[3];
  EXPECT_EQ(I32(w, "context_lens"), (std::vector<int32_t>{7, 5}));
  EXPECT_EQ(I32(w, "query_start"), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(I64(w, "positions"), (std::vector<int64_t>{6, 3, 4}));
  EXPECT_EQ(I64(w, "slot_mapping"), (std::vector<int64_t>{a1 * 4 + 2, b0 * 4 + 3, b1 * 4}));
  EXPECT_EQ(Stats(kv).used_units, 4u);
}

TEST_F(PlanView, EveryLabelHasItsOwnSequence) {
  auto kv = MakeKv(std::string(kSmall) + "labels = [\"cond\", \"uncond\"]\n");
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {5}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> cond = I32(*last_view_, "block_table");
  std::vector<int32_t> uncond = I32(*last_view_, "uncond.block_table");
  ASSERT_EQ(cond.size(), 2u);
  ASSERT_EQ(uncond.size(), 2u);
  for (int32_t p : cond) EXPECT_EQ(std::count(uncond.begin(), uncond.end(), p), 0);
  EXPECT_EQ(I32(*last_view_, "uncond.context_lens"), (std::vector<int32_t>{5}));
  EXPECT_NE(Get(*last_view_, "uncond.kv_pool"), nullptr);
  EXPECT_EQ(Stats(kv).used_units, 4u);
}

TEST_F(PlanView, PoolTakesTheConfiguredDtype) {
  for (auto [name, code] : {std::pair{"float16", kDLFloat}, std::pair{"bfloat16", kDLBfloat}}) {
    PluginInstance* kv = MakeKv(std::string(kSmall) + "dtype = \"" + name + "\"\n");
    FakeRequest a(1);
    ASSERT_TRUE(Add(kv, a).ok());
    ASSERT_EQ(Step(kv, {&a}, {1}), (std::vector<uint32_t>{0}));
    const mstar_tensor_t* pool = Get(*last_view_, "kv_pool");
    EXPECT_EQ(pool->dl.dtype.code, code) << name;
    EXPECT_EQ(pool->dl.dtype.bits, 16) << name;
  }
}

TEST_F(PlanView, BadConfigNamesTheKey) {
  Result<FactoryRef> factory = registry_->Find(MSTAR_KIND_RESOURCE, "kv_paged");
  ASSERT_TRUE(factory.ok());
  Diagnostics d;
  auto table = ParseTomlText(
      "num_pages = 4\nlayers = 1\nkv_heads = 1\nhead_dim = 2\ndtype = "
      "\"int8\"\n",
      "kv.toml", &d);
  InstanceOptions options;
  options.name = "kv";
  options.config = std::make_shared<ConfigTree>(std::move(*table), "kv.toml", "config");
  auto made = PluginInstance::Create(factory.value(), options);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("dtype 'int8'"), std::string::npos)
      << made.status().message();
}

// Sizes whose token positions or pool bytes do not fit are refused, naming the key, before
// anything is sized by them.
TEST_F(PlanView, APoolTooLargeToIndexIsRefusedBeforeAnythingIsSized) {
  Result<FactoryRef> factory = registry_->Find(MSTAR_KIND_RESOURCE, "kv_paged");
  ASSERT_TRUE(factory.ok());
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {"num_pages = 2147483647\ncapture_context = 16\nlayers = 1\nkv_heads = 1\nhead_dim "
            "= 2\n",
            "kv.toml:1:13: config.num_pages: 2147483647 pages of 16 tokens hold more positions"},
           {"num_pages = 100\nlayers = 2147483647\nkv_heads = 2147483647\nhead_dim = "
            "2147483647\n",
            "the KV pool's size overflows 64 bits"}}) {
    Diagnostics d;
    auto table = ParseTomlText(body, "kv.toml", &d);
    InstanceOptions options;
    options.name = "kv";
    options.config = std::make_shared<ConfigTree>(std::move(*table), "kv.toml", "config");
    auto made = PluginInstance::Create(factory.value(), options);
    ASSERT_FALSE(made.ok()) << body;
    EXPECT_EQ(made.status().code(), Code::kInvalidArgument);
    EXPECT_NE(made.status().message().find(message), std::string::npos) << made.status().message();
  }
}

// A capture_context beyond what the cache holds is taken as all of it: a captured row's block
// table is num_pages wide, not sized (and copied every step) by the config's number.
TEST_F(PlanView, ACaptureContextBeyondTheCacheIsTheCachesWidth) {
  PluginInstance* kv = MakeKv(
      "page_size = 1\nnum_pages = 4\ncapture_context = 2147483647\nlayers = 1\nkv_heads = "
      "1\nhead_dim = 2\n");
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  StepArrays arrays;
  arrays.Add(&a.info, nullptr, 2, nullptr);
  mstar_step_decl_t decl = arrays.Decl("lm", "decode");
  decl.slot = 0;  // a captured step
  const mstar_resource_vtable_t* t = T(kv);
  ASSERT_TRUE(TakeStatus(t->declare(kv->self(), &decl)).ok());
  mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
  ASSERT_TRUE(TakeStatus(t->admit(kv->self(), &decl, 0, &admit)).ok());
  ASSERT_EQ(admit.outcome, MSTAR_ADMIT_READY);
  TensorMapPtr view = NewTensorMap();
  ASSERT_TRUE(TakeStatus(t->plan(kv->self(), &decl, view.get(), nullptr)).ok());
  const mstar_tensor_t* table = Get(*view, "block_table");
  ASSERT_NE(table, nullptr);
  ASSERT_EQ(table->dl.ndim, 2);
  EXPECT_EQ(table->dl.shape[1], 4);
  t->abort_step(kv->self(), &decl);
}

using Admission = KvTest;

TEST_F(Admission, ShortPoolWaitsAndOversizedRequestIsUnservable) {
  auto kv = MakeKv("page_size = 4\nnum_pages = 4\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n");
  FakeRequest a(1), b(2), c(3);
  for (FakeRequest* r : {&a, &b, &c}) ASSERT_TRUE(Add(kv, *r).ok());
  ASSERT_EQ(Step(kv, {&a}, {12}), (std::vector<uint32_t>{MSTAR_ADMIT_READY}));
  std::vector<uint64_t> short_by;
  EXPECT_EQ(Step(kv, {&b}, {8}, {}, nullptr, &short_by),
            (std::vector<uint32_t>{MSTAR_ADMIT_NOT_READY}));
  EXPECT_EQ(short_by, (std::vector<uint64_t>{1}));
  std::string error;
  EXPECT_EQ(Step(kv, {&c}, {17}, {}, &error), (std::vector<uint32_t>{MSTAR_ADMIT_UNSERVABLE}));
  EXPECT_NE(error.find("request 3 needs 5 pages"), std::string::npos) << error;
  EXPECT_NE(error.find("the pool has 4 pages"), std::string::npos) << error;
  EXPECT_EQ(Stats(kv).used_units, 3u);  // nothing of the refused admissions stays
  T(kv)->remove_request(kv->self(), 1);
  EXPECT_EQ(Step(kv, {&b}, {8}), (std::vector<uint32_t>{MSTAR_ADMIT_READY}));
  EXPECT_EQ(Stats(kv).used_units, 2u);
}

TEST_F(Admission, FailedAndAbortedStepsRollBack) {
  auto kv = MakeKv(kSmall);
  FakeRequest a(1), b(2);
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&a, &b}, {3, 3}), (std::vector<uint32_t>{0, 0}));
  // A's forward fails, B's succeeds: A keeps its old state, B grows.
  ASSERT_EQ(Step(kv, {&a, &b}, {6, 6}, {0, 1}), (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(Probe(kv, a).len, 3);
  EXPECT_EQ(Probe(kv, a).pages.size(), 1u);
  EXPECT_EQ(Probe(kv, b).len, 9);
  EXPECT_EQ(Stats(kv).used_units, 4u);
  // An aborted step returns what admit took.
  Step(kv, {&a, &b}, {20, 20}, {}, nullptr, nullptr, /*abort_instead=*/true);
  EXPECT_EQ(Stats(kv).used_units, 4u);
  EXPECT_EQ(Probe(kv, b).len, 9);
}

// Random workloads: every live request holds exactly ceil(len / page_size) pages, no page is in
// two requests, the used count is the number of pages held, and removing everything returns
// every page (a request as large as the pool fits again).
TEST_F(Admission, RandomOperationsKeepTheAllocatorExact) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    auto kv = MakeKv("page_size = 4\nnum_pages = 24\nlayers = 1\nkv_heads = 1\nhead_dim = 1\n" +
                     std::string(seed % 2 == 0 ? "prefix_cache = false\n" : ""));
    std::map<mstar_request_id_t, std::unique_ptr<FakeRequest>> live;
    std::map<mstar_request_id_t, int32_t> lens;
    mstar_request_id_t next = 1;
    for (int op = 0; op < 300; ++op) {
      uint32_t choice = rng() % 10;
      if (choice < 2 || live.empty()) {
        // Some requests share a prompt so that the prefix cache has something to share.
        auto r = std::make_unique<FakeRequest>(
            next, Tokens{1, 2, 3, 4, 5, 6, 7, 8, static_cast<int32_t>(rng() % 3)});
        ASSERT_TRUE(Add(kv, *r).ok());
        lens[next] = 0;
        live[next++] = std::move(r);
      } else if (choice < 3) {
        auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
        T(kv)->remove_request(kv->self(), it->first);
        lens.erase(it->first);
        live.erase(it);
      } else {
        std::vector<FakeRequest*> batch;
        std::vector<uint32_t> tokens;
        std::vector<uint8_t> ok;
        for (auto& [id, r] : live) {
          if (rng() % 2 == 0) continue;
          batch.push_back(r.get());
          tokens.push_back(lens[id] == 0 ? 9 : rng() % 3);
          ok.push_back(rng() % 5 != 0 ? 1 : 0);
        }
        if (batch.empty()) continue;
        std::vector<uint32_t> outcomes = Step(kv, batch, tokens, ok);
        bool ready = std::all_of(outcomes.begin(), outcomes.end(),
                                 [](uint32_t o) { return o == MSTAR_ADMIT_READY; });
        if (ready) {
          for (size_t i = 0; i < batch.size(); ++i) {
            if (ok[i] != 0) lens[batch[i]->info.request_id] += static_cast<int32_t>(tokens[i]);
          }
        } else {
          // Too big for what is free: evict someone so the workload keeps moving.
          auto victim = live.begin();
          T(kv)->remove_request(kv->self(), victim->first);
          lens.erase(victim->first);
          live.erase(victim);
        }
      }
      std::map<int32_t, int> owners;
      uint64_t held = 0;
      for (auto& [id, r] : live) {
        Held h = Probe(kv, *r);
        ASSERT_EQ(h.len, lens[id]) << "seed " << seed << " op " << op;
        ASSERT_EQ(h.pages.size(), static_cast<size_t>((lens[id] + 3) / 4)) << seed << " " << op;
        std::set<int32_t> own(h.pages.begin(), h.pages.end());
        ASSERT_EQ(own.size(), h.pages.size()) << "a page twice in one request";
        for (int32_t p : h.pages) ++owners[p];
      }
      for (auto& [page, count] : owners) {
        // Pages are shared only by the prefix cache, and only full pages of the shared prompt.
        if (seed % 2 == 0) {
          ASSERT_EQ(count, 1) << "page " << page << " double-used";
        }
        held += 1;
      }
      mstar_resource_stats_t s = Stats(kv);
      ASSERT_EQ(s.used_units, held) << "seed " << seed << " op " << op;
      ASSERT_LE(s.used_units + s.cached_units, s.capacity_units);
    }
    for (auto& [id, r] : live) T(kv)->remove_request(kv->self(), id);
    EXPECT_EQ(Stats(kv).used_units, 0u);
    FakeRequest whole(1000);
    ASSERT_TRUE(Add(kv, whole).ok());
    EXPECT_EQ(Step(kv, {&whole}, {96}), (std::vector<uint32_t>{MSTAR_ADMIT_READY}));
    EXPECT_EQ(Stats(kv).cached_units, 0u);
  }
}

}  // namespace
}  // namespace mstar::kvtest
