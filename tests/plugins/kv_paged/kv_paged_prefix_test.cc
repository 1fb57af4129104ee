// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged's prefix cache: full pages keyed by a hash chain over the token ids the steps add (the
// host's input_tokens) are shared between requests with the same prompt prefix (and the same
// checkpoint, salt and tenant), a hit always leaves the last token to compute, decode steps
// extend the chain, a step without its ids ends it, what a client writes in its parameters keys
// nothing, and unreferenced cached pages are evicted least recently used first, the tail of a
// chain before its head. Every label is keyed (with the same hit count in each), and pages
// reloaded from a tier are cached again.
#include <cstring>

#include "kv_fixture.h"

namespace mstar::kvtest {
namespace {

const char* kCfg = "page_size = 4\nnum_pages = 16\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n";

using PrefixCache = KvTest;

TEST_F(PrefixCache, SamePromptPrefixSharesFullPages) {
  PluginInstance* kv = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  FakeRequest b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 99, 98});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&a}, {10}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> pa = I32(*last_view_, "block_table");
  ASSERT_EQ(Step(kv, {&b}, {10}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> pb = I32(*last_view_, "block_table");
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  ASSERT_EQ(pb.size(), 3u);
  EXPECT_EQ(pb[0], pa[0]);
  EXPECT_EQ(pb[1], pa[1]);
  EXPECT_NE(pb[2], pa[2]);
  // The cached tokens' slots are the shared pages' slots; the rest are B's own.
  std::vector<int64_t> slots = I64(*last_view_, "slot_mapping");
  EXPECT_EQ(slots[0], pa[0] * 4);
  EXPECT_EQ(slots[7], pa[1] * 4 + 3);
  EXPECT_EQ(slots[8], pb[2] * 4);
  EXPECT_EQ(Stats(kv).used_units, 4u);  // 3 + 3 pages, 2 of them shared

  // Exactly one page of prompt: the hit is capped so the last token is still computed.
  FakeRequest c(3, Tokens{1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_TRUE(Add(kv, c).ok());
  ASSERT_EQ(Step(kv, {&c}, {8}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{4}));
  EXPECT_EQ(I32(*last_view_, "block_table")[0], pa[0]);
  EXPECT_NE(I32(*last_view_, "block_table")[1], pa[1]);

  // Another tenant's salt, or the same prompt on another checkpoint, never hits.
  FakeRequest d(4, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9}, "tenant-b");
  ASSERT_TRUE(Add(kv, d).ok());
  ASSERT_EQ(Step(kv, {&d}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{0}));
  PluginInstance* other = MakeKv(std::string(kCfg) + "salt = \"x\"\n");
  FakeRequest e(5, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  FakeRequest f(6, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(other, e).ok());
  ASSERT_TRUE(Add(other, f).ok());
  ASSERT_EQ(Step(other, {&e}, {9}), (std::vector<uint32_t>{0}));
  ASSERT_EQ(Step(other, {&f}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));  // salted, but consistently
}

TEST_F(PrefixCache, DisabledCacheSharesNothing) {
  PluginInstance* kv = MakeKv(std::string(kCfg) + "prefix_cache = false\n");
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9}), b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&a}, {9}), (std::vector<uint32_t>{0}));
  ASSERT_EQ(Step(kv, {&b}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{0}));
  EXPECT_EQ(Stats(kv).used_units, 6u);
}

TEST_F(PrefixCache, DecodeStepsExtendTheChain) {
  PluginInstance* kv = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {4}), (std::vector<uint32_t>{0}));  // the prompt
  ASSERT_EQ(Step(kv, {&a}, {3}), (std::vector<uint32_t>{0}));  // then what it generated
  ASSERT_EQ(Step(kv, {&a}, {1}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> pa = I32(*last_view_, "block_table");
  FakeRequest b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&b}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  EXPECT_EQ(I32(*last_view_, "block_table")[1], pa[1]);
}

// Tokens a step does not say leave a gap: nothing after it can be keyed, so the chain ends
// (the pages keyed before stay shared). Were the later ids keyed after the gap, positions 4-7
// would hold 7, 8, 9, 10 under the keys of a prompt that has them at positions 4-7.
TEST_F(PrefixCache, AStepWithoutItsTokensEndsTheChain) {
  PluginInstance* kv = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {4}), (std::vector<uint32_t>{0}));
  ASSERT_EQ(Step(kv, {&a}, {2}), (std::vector<uint32_t>{0}));  // no ids left: unknown
  a.tokens = {1, 2, 3, 4, 0, 0, 7, 8, 9, 10};                  // ids for the steps after the gap
  a.fed = 6;
  ASSERT_EQ(Step(kv, {&a}, {4}), (std::vector<uint32_t>{0}));
  FakeRequest b(2, Tokens{1, 2, 3, 4, 7, 8, 9, 10, 11});
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&b}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{4}));
}

// A step that did not run keys nothing; its retry keys its tokens where they belong.
TEST_F(PrefixCache, AFailedStepKeysNothingAndItsRetryDoes) {
  PluginInstance* kv = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {4}), (std::vector<uint32_t>{0}));
  ASSERT_EQ(Step(kv, {&a}, {4}, {0}), (std::vector<uint32_t>{0}));  // its forward failed
  ASSERT_EQ(Step(kv, {&a}, {4}), (std::vector<uint32_t>{0}));
  FakeRequest b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&b}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
}

// What a client claims its prompt is keys nothing: a request whose parameters name another
// prompt's tokens while it computes its own must not leave its K/V under the other's keys.
TEST_F(PrefixCache, ClientParametersNeverKeyTheCache) {
  PluginInstance* kv = MakeKv(kCfg);
  FakeRequest liar(1, "prompt_tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9]\n");
  liar.tokens = {50, 51, 52, 53, 54, 55, 56, 57, 58};
  ASSERT_TRUE(Add(kv, liar).ok());
  ASSERT_EQ(Step(kv, {&liar}, {9}), (std::vector<uint32_t>{0}));
  FakeRequest honest(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, honest).ok());
  ASSERT_EQ(Step(kv, {&honest}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{0}));
  // The liar's real tokens are what its pages are keyed by.
  FakeRequest same(3, Tokens{50, 51, 52, 53, 54, 55, 56, 57, 58});
  ASSERT_TRUE(Add(kv, same).ok());
  ASSERT_EQ(Step(kv, {&same}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
}

TEST_F(PrefixCache, EvictsLeastRecentlyUsedTailFirst) {
  PluginInstance* kv =
      MakeKv("page_size = 4\nnum_pages = 6\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n");
  Tokens prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  FakeRequest a(1, prompt);
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {12}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> pa = I32(*last_view_, "block_table");
  T(kv)->remove_request(kv->self(), 1);
  EXPECT_EQ(Stats(kv).cached_units, 3u);
  EXPECT_EQ(Stats(kv).used_units, 0u);
  // Free pages go first; the cache is untouched while any are left.
  FakeRequest x(2);
  ASSERT_TRUE(Add(kv, x).ok());
  ASSERT_EQ(Step(kv, {&x}, {12}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Stats(kv).cached_units, 3u);
  // Then the least recently used cached page: the tail of A's chain.
  FakeRequest y(3);
  ASSERT_TRUE(Add(kv, y).ok());
  ASSERT_EQ(Step(kv, {&y}, {1}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "block_table"), (std::vector<int32_t>{pa[2]}));
  EXPECT_EQ(Stats(kv).cached_units, 2u);
  // The head of the chain still hits.
  FakeRequest d(4, prompt);
  ASSERT_TRUE(Add(kv, d).ok());
  std::vector<uint64_t> short_by;
  EXPECT_EQ(Step(kv, {&d}, {12}, {}, nullptr, &short_by),
            (std::vector<uint32_t>{MSTAR_ADMIT_NOT_READY}));
  EXPECT_EQ(short_by, (std::vector<uint64_t>{1}));  // 2 hits + 1 new page; nothing is free
  T(kv)->remove_request(kv->self(), 3);
  ASSERT_EQ(Step(kv, {&d}, {12}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  std::vector<int32_t> pd = I32(*last_view_, "block_table");
  EXPECT_EQ(pd[0], pa[0]);
  EXPECT_EQ(pd[1], pa[1]);
}

TEST_F(PrefixCache, EveryLabelIsCachedWithTheSameHitCount) {
  PluginInstance* kv = MakeKv(std::string(kCfg) + "labels = [\"cond\", \"uncond\"]\n");
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  FakeRequest b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&a}, {10}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> cond_a = I32(*last_view_, "block_table");
  std::vector<int32_t> uncond_a = I32(*last_view_, "uncond.block_table");
  ASSERT_EQ(Step(kv, {&b}, {10}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  EXPECT_EQ(I32(*last_view_, "uncond.cached"), (std::vector<int32_t>{8}));
  std::vector<int32_t> cond_b = I32(*last_view_, "block_table");
  std::vector<int32_t> uncond_b = I32(*last_view_, "uncond.block_table");
  ASSERT_EQ(uncond_b.size(), 3u);
  EXPECT_EQ(cond_b[1], cond_a[1]);
  EXPECT_EQ(uncond_b[0], uncond_a[0]);  // each label shares its own pages
  EXPECT_EQ(uncond_b[1], uncond_a[1]);
  EXPECT_NE(uncond_b[2], uncond_a[2]);
  EXPECT_EQ(Stats(kv).used_units, 8u);  // 6 for A; B adds one page per label
}

TEST_F(PrefixCache, AHitNeedsTheSamePagesInEveryLabel) {
  // Six pages: A's two labels take all of them. Its sequences are released cond first, tail
  // first, so X's two evictions take exactly cond's cached pages and leave uncond's: the uncond
  // chain alone must not be reported as a hit.
  PluginInstance* kv = MakeKv(
      "page_size = 4\nnum_pages = 6\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n"
      "labels = [\"cond\", \"uncond\"]\n");
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {9}), (std::vector<uint32_t>{0}));
  T(kv)->remove_request(kv->self(), 1);
  EXPECT_EQ(Stats(kv).cached_units, 4u);  // two full pages per label
  FakeRequest x(2);
  ASSERT_TRUE(Add(kv, x).ok());
  ASSERT_EQ(Step(kv, {&x}, {8}), (std::vector<uint32_t>{0}));  // 2 free pages + 2 evicted
  EXPECT_EQ(Stats(kv).cached_units, 2u);
  T(kv)->remove_request(kv->self(), 2);
  FakeRequest b(3, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&b}, {9}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "uncond.cached"), (std::vector<int32_t>{0}));
}

// A first step's hits in every label come off the LRU list before any fresh page is taken:
// otherwise the cond label's fresh page evicts an uncond hit (the least recently used cached
// page) and the uncond label then appends a page cond holds. Eight pages: A leaves two keyed
// pages per label cached, Y one more per label, X holds the last two free pages; B, with A's
// prompt, hits two pages per label and needs one fresh page per label, which only evictions of
// Y's pages can give.
TEST_F(PrefixCache, AFirstLabelsFreshPageNeverEvictsALaterLabelsHit) {
  PluginInstance* kv = MakeKv(
      "page_size = 4\nnum_pages = 8\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n"
      "labels = [\"cond\", \"uncond\"]\n");
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {9}), (std::vector<uint32_t>{0}));
  std::vector<int32_t> cond_a = I32(*last_view_, "block_table");
  std::vector<int32_t> uncond_a = I32(*last_view_, "uncond.block_table");
  T(kv)->remove_request(kv->self(), 1);
  FakeRequest y(2, Tokens{9, 9, 9, 9, 9});
  ASSERT_TRUE(Add(kv, y).ok());
  ASSERT_EQ(Step(kv, {&y}, {5}), (std::vector<uint32_t>{0}));
  T(kv)->remove_request(kv->self(), 2);
  FakeRequest x(3);
  ASSERT_TRUE(Add(kv, x).ok());
  ASSERT_EQ(Step(kv, {&x}, {1}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Stats(kv).cached_units, 6u);
  EXPECT_EQ(Stats(kv).used_units, 2u);

  FakeRequest b(4, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(kv, b).ok());
  std::string error;
  ASSERT_EQ(Step(kv, {&b}, {9}, {}, &error), (std::vector<uint32_t>{0})) << error;
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  EXPECT_EQ(I32(*last_view_, "uncond.cached"), (std::vector<int32_t>{8}));
  std::vector<int32_t> cond_b = I32(*last_view_, "block_table");
  std::vector<int32_t> uncond_b = I32(*last_view_, "uncond.block_table");
  ASSERT_EQ(cond_b.size(), 3u);
  ASSERT_EQ(uncond_b.size(), 3u);
  EXPECT_EQ(cond_b[0], cond_a[0]);
  EXPECT_EQ(cond_b[1], cond_a[1]);
  EXPECT_EQ(uncond_b[0], uncond_a[0]);
  EXPECT_EQ(uncond_b[1], uncond_a[1]);
  EXPECT_EQ(Stats(kv).used_units, 8u);
  EXPECT_EQ(Stats(kv).cached_units, 0u);  // Y's two pages were evicted for B's fresh ones
}

TEST_F(PrefixCache, ReloadedPagesAreCachedAgain) {
  PluginInstance* kv = MakeKv(
      "page_size = 4\nnum_pages = 6\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n", {MakeTier()});
  Tokens prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  FakeRequest a(1, prompt);
  ASSERT_TRUE(Add(kv, a).ok());
  ASSERT_EQ(Step(kv, {&a}, {12}), (std::vector<uint32_t>{0}));
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(T(kv)->offload(kv->self(), 1, 0, nullptr, &reclaimed)).ok());
  EXPECT_EQ(reclaimed, 3u);
  // X needs the whole pool: A's cached pages are evicted, so only the tier holds A's KV.
  FakeRequest x(2);
  ASSERT_TRUE(Add(kv, x).ok());
  ASSERT_EQ(Step(kv, {&x}, {24}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Stats(kv).cached_units, 0u);
  T(kv)->remove_request(kv->self(), 2);
  uint32_t done = 0;
  ASSERT_TRUE(TakeStatus(T(kv)->reload(kv->self(), 1, nullptr, &done)).ok());
  ASSERT_EQ(done, 1u);
  std::vector<int32_t> pa = Probe(kv, a).pages;
  ASSERT_EQ(pa.size(), 3u);
  // B with A's prompt hits the reloaded pages (all but the page holding its last token).
  FakeRequest b(3, prompt);
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&b}, {12}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  std::vector<int32_t> pb = I32(*last_view_, "block_table");
  EXPECT_EQ(pb[0], pa[0]);
  EXPECT_EQ(pb[1], pa[1]);
  EXPECT_EQ(Stats(kv).used_units, 4u);
}

}  // namespace
}  // namespace mstar::kvtest
