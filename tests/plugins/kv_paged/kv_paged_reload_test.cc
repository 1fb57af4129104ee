// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged reload takes back what never left the pool: an offloaded page whose prefix key the
// cache still holds, unreferenced (offload leaves keyed pages cached), comes back as that page,
// with no tier read and no new page; only the others are read. The eviction that makes room for
// those never evicts a page the reload is about to take back. A page another request holds is
// read back rather than shared.
#include <algorithm>

#include "core/metrics.h"
#include "kv_moving.h"

namespace mstar::kvtest {
namespace {

// A 13-token prompt: 3 full pages of 4 (keyed once committed) and a partial one.
const Tokens kPrompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};

class ReloadCached : public Moving {
 protected:
  static int64_t Counter(const std::string& name) {
    return Metrics::Global().Counter("kv_paged/kv.reload." + name);
  }
  // Reloads request id, which must come back; returns the pages of r after it.
  std::vector<int32_t> ReloadAll(PluginInstance* kv, FakeRequest& r) {
    uint32_t done = 0;
    Status s = Reload(kv, r.info.request_id, &done);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(done, 1u);
    return Probe(kv, r).pages;
  }
};

TEST_F(ReloadCached, PagesStillCachedComeBackWithoutATierRead) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&tier->handle});
  FakeRequest a(1, kPrompt);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 13);
  const std::vector<int32_t> before = Probe(kv, a).pages;
  ASSERT_EQ(before.size(), 4u);
  EXPECT_EQ(Offload(kv, 1), 4u);
  EXPECT_EQ(tier->put_data.size(), 4u) << "every page is written: the cache may drop any";
  EXPECT_EQ(Stats(kv).cached_units, 3u) << "the full pages stay cached, unreferenced";

  // Only the partial page's block is read: a second GET would fail.
  tier->mode = FaultyTier::kDataLoss;
  tier->healthy_gets = 1;
  const int64_t read = Counter("read_pages"), cached = Counter("cached_pages");
  const std::vector<int32_t> after = ReloadAll(kv, a);
  EXPECT_EQ(tier->get_data.size(), 1u);
  EXPECT_EQ(Counter("read_pages") - read, 1);
  EXPECT_EQ(Counter("cached_pages") - cached, 3);
  ASSERT_EQ(after.size(), 4u);
  EXPECT_EQ(std::vector<int32_t>(after.begin(), after.begin() + 3),
            std::vector<int32_t>(before.begin(), before.begin() + 3));
  EXPECT_EQ(Stats(kv).used_units, 4u);
  EXPECT_EQ(Stats(kv).cached_units, 0u) << "no page is held twice, once cached and once copied";
  EXPECT_EQ(Verify(kv, a), 0);
  Fill(kv, a, 5);  // A goes on from where it was
  EXPECT_EQ(Verify(kv, a), 0);
}

// A's full pages are the oldest cached pages and the pool has no free page: the room for A's
// partial page comes from evicting Y's cached page, never one of A's.
TEST_F(ReloadCached, TheRoomForTheReadPagesNeverComesFromThePagesTakenBack) {
  PluginInstance* kv = MakeKv(kCfg, {MakeTier()});
  FakeRequest a(1, kPrompt), y(2, Tokens{50, 51, 52, 53, 54, 55, 56, 57}), x(3);
  for (FakeRequest* r : {&a, &y, &x}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 13);  // 4 pages
  Fill(kv, y, 8);   // 2 pages
  EXPECT_EQ(Offload(kv, 1), 4u);
  T(kv)->remove_request(kv->self(), 2);  // Y's pages: cached, more recently used than A's
  Fill(kv, x, 12);                       // the last 3 free pages
  ASSERT_EQ(Stats(kv).cached_units, 5u);
  ASSERT_EQ(Stats(kv).used_units, 3u);

  const std::vector<int32_t> pages = ReloadAll(kv, a);
  EXPECT_EQ(pages.size(), 4u);
  EXPECT_EQ(Stats(kv).used_units, 7u);
  EXPECT_EQ(Stats(kv).cached_units, 1u) << "one of Y's pages was evicted";
  EXPECT_EQ(Verify(kv, a), 0);
  EXPECT_EQ(Verify(kv, x), 0);
}

// When the pages to read do not fit beside the ones taken back, the reload waits and evicts
// nothing: the cached pages it would take back are still there when room comes.
TEST_F(ReloadCached, AReloadThatMustWaitEvictsNothing) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&tier->handle});
  FakeRequest a(1, kPrompt), x(2);
  for (FakeRequest* r : {&a, &x}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 13);
  EXPECT_EQ(Offload(kv, 1), 4u);
  Fill(kv, x, 20);  // every free page
  uint32_t done = 1;
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  EXPECT_EQ(done, 0u);
  EXPECT_EQ(Stats(kv).cached_units, 3u);
  EXPECT_TRUE(tier->get_data.empty());
  T(kv)->remove_request(kv->self(), 2);
  ReloadAll(kv, a);
  EXPECT_EQ(tier->get_data.size(), 1u);
  EXPECT_EQ(Verify(kv, a), 0);
}

// B shares A's first three pages; offloading A frees only its own last page (the shared ones
// stay held by B). Reloading A reads all four back into pages of its own: were it to share B's
// again, neither request would hold a page only it holds, so neither could be evicted alone
// (the engine evicts one request at a time, choosing among those with something reclaimable).
TEST_F(ReloadCached, PagesAnotherRequestHoldsAreReadBackNotShared) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&tier->handle});
  FakeRequest a(1, kPrompt);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 13);
  FakeRequest b(2, kPrompt);
  ASSERT_TRUE(Add(kv, b).ok());
  ASSERT_EQ(Step(kv, {&b}, {13}), (std::vector<uint32_t>{0}));
  ASSERT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{12}));
  ASSERT_EQ(Stats(kv).used_units, 5u);
  EXPECT_EQ(Offload(kv, 1), 1u);
  EXPECT_EQ(Stats(kv).used_units, 4u);

  const std::vector<int32_t> pages = ReloadAll(kv, a);
  EXPECT_EQ(tier->get_data.size(), 4u);
  EXPECT_EQ(Stats(kv).used_units, 8u);
  uint64_t units = 0;
  ASSERT_TRUE(TakeStatus(T(kv)->reclaimable(kv->self(), 1, &units)).ok());
  EXPECT_EQ(units, 4u);
  for (int32_t p : Probe(kv, b).pages)
    EXPECT_EQ(std::count(pages.begin(), pages.end(), p), 0) << "page " << p;
  EXPECT_EQ(Verify(kv, a), 0);
}

// Without the prefix cache nothing is keyed, so every page is read back.
TEST_F(ReloadCached, WithoutThePrefixCacheEveryPageIsRead) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv = MakeKv(std::string(kCfg) + "prefix_cache = false\n", {&tier->handle});
  FakeRequest a(1, kPrompt);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 13);
  EXPECT_EQ(Offload(kv, 1), 4u);
  ReloadAll(kv, a);
  EXPECT_EQ(tier->get_data.size(), 4u);
  EXPECT_EQ(Verify(kv, a), 0);
}

}  // namespace
}  // namespace mstar::kvtest
