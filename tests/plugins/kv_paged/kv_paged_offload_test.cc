// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged moving pages: offload to a real tier (kit_memory) and reload byte-exact, partial
// offload, reload that waits for capacity, a tier that lost the blocks, and publish/check_ready
// between two instances.
#include "host/host_objects.h"
#include "kv_moving.h"

namespace mstar::kvtest {
namespace {

TEST_F(Moving, OffloadAndReloadAreByteExact) {
  PluginInstance* kv = MakeKv(kCfg, {MakeTier()});
  mstar_resource_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr};
  ASSERT_TRUE(TakeStatus(T(kv)->info(kv->self(), &info)).ok());
  EXPECT_NE(info.flags & MSTAR_RESOURCE_EVICTABLE, 0u);
  EXPECT_STREQ(info.unit, "pages");
  FakeRequest a(1), b(2), c(3);
  for (FakeRequest* r : {&a, &b, &c}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 10);
  Fill(kv, b, 7);
  ASSERT_EQ(Verify(kv, a), 0);
  uint64_t units = 0;
  ASSERT_TRUE(TakeStatus(T(kv)->reclaimable(kv->self(), 1, &units)).ok());
  EXPECT_EQ(units, 3u);
  double priority = 0;
  ASSERT_TRUE(TakeStatus(T(kv)->offload_priority(kv->self(), 1, &priority)).ok());
  EXPECT_EQ(priority, 3.0);

  EXPECT_EQ(Offload(kv, 1), 3u);
  EXPECT_TRUE(Offloaded(kv, 1));
  EXPECT_EQ(Stats(kv).offloaded_units, 3u);
  EXPECT_EQ(Stats(kv).used_units, 2u);
  EXPECT_EQ(Step(kv, {&a}, {1}), (std::vector<uint32_t>{MSTAR_ADMIT_NOT_READY}));

  // C takes the freed pages (and overwrites them); A cannot come back until C leaves.
  Fill(kv, c, 20);
  uint32_t done = 1;
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  EXPECT_EQ(done, 0u);
  EXPECT_TRUE(Offloaded(kv, 1));
  T(kv)->remove_request(kv->self(), 3);
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  EXPECT_EQ(done, 1u);
  EXPECT_FALSE(Offloaded(kv, 1));
  EXPECT_EQ(Probe(kv, a).len, 10);
  EXPECT_EQ(Verify(kv, a), 0);
  EXPECT_EQ(Verify(kv, b), 0);
  // A continues where it was.
  Fill(kv, a, 3);
  EXPECT_EQ(Verify(kv, a), 0);

  // Partial offload: B's last page only, then all of B in a second offload.
  EXPECT_EQ(Offload(kv, 2, 1), 1u);
  EXPECT_TRUE(Offloaded(kv, 2));
  EXPECT_EQ(Offload(kv, 2, 1), 1u);
  EXPECT_EQ(Stats(kv).offloaded_units, 2u);
  ASSERT_TRUE(Reload(kv, 2, &done).ok());
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(Verify(kv, b), 0);
  EXPECT_EQ(Stats(kv).offloaded_units, 0u);
}

// A page is one contiguous block of the pool, so a tier that reads the pool's memory (here every
// tier: the pool is in host memory) is handed the pages themselves: each PUT reads its page in
// the pool and each GET writes the page the reload took, with no staging copy between.
TEST_F(Moving, TiersReadAndWriteThePagesInThePool) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&tier->handle});
  FakeRequest a(1), b(2);
  for (FakeRequest* r : {&a, &b}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 10);  // 3 pages
  const auto* pool = static_cast<const char*>(Get(*last_view_, "kv_pool")->dl.data);
  auto blocks = [&](const std::vector<int32_t>& pages) {
    std::vector<const void*> at;
    for (int32_t p : pages) at.push_back(pool + kPageBytes * static_cast<uint64_t>(p));
    return at;
  };
  const Held before = Probe(kv, a);
  EXPECT_EQ(Offload(kv, 1), 3u);
  EXPECT_EQ(tier->put_data, blocks(before.pages));
  Fill(kv, b, 12);  // takes A's pages and overwrites them
  uint32_t done = 0;
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  ASSERT_EQ(done, 1u);
  const Held after = Probe(kv, a);
  EXPECT_EQ(tier->get_data, blocks(after.pages));
  EXPECT_EQ(Verify(kv, a), 0);
  EXPECT_EQ(Verify(kv, b), 0);
}

// With capture_context the pool holds a scratch page beyond num_pages (padding rows write there):
// pages still move to the tier and back byte for byte, and the scratch page is never one of them.
TEST_F(Moving, WithTheCaptureScratchPageOffloadAndReloadAreByteExact) {
  PluginInstance* kv = MakeKv(std::string(kCfg) + "capture_context = 8\n", {MakeTier()});
  FakeRequest a(1), b(2), c(3);
  for (FakeRequest* r : {&a, &b, &c}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 10);
  Fill(kv, b, 7);
  EXPECT_EQ(Get(*last_view_, "kv_pool")->dl.shape[0], kPages + 1);
  EXPECT_EQ(Offload(kv, 1), 3u);
  Fill(kv, c, 20);  // takes A's pages and overwrites them
  T(kv)->remove_request(kv->self(), 3);
  uint32_t done = 0;
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(Verify(kv, a), 0);
  EXPECT_EQ(Verify(kv, b), 0);
}

TEST_F(Moving, OffloadAndReloadOnAStreamAreByteExact) {
  // With a stream the page copies are ordered on it and fenced by an event (asynchronous on
  // device builds); the pages are released and staging reused only after the fence.
  PluginInstance* kv = MakeKv(kCfg, {MakeTier()});
  mstar_stream_t* stream = HostStream(kv);
  FakeRequest a(1), b(2);
  for (FakeRequest* r : {&a, &b}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 10);
  Fill(kv, b, 9);
  for (mstar_request_id_t id : {1, 2}) EXPECT_EQ(Offload(kv, id, 0, stream), 3u);
  OverwriteFreePages(kv, 32);  // else a reload may get its own pages back, bytes and all
  ReloadEach(kv, {2, 1}, stream);
  EXPECT_EQ(Verify(kv, a), 0);
  EXPECT_EQ(Verify(kv, b), 0);
  kv->host()->stream_release(stream);
}

// On a stream, through a tier of host blocks (kit_memory) or one that copies the pool's device
// memory itself (tier_host, device_access, which moves pages lying back to back in one copy),
// every byte comes back.
TEST_F(Moving, OffloadAndReloadThroughEitherKindOfTierOnAStreamAreByteExact) {
  for (bool device_access : {false, true}) {
    SCOPED_TRACE(device_access ? "tier_host" : "kit_memory");
    mstar_tier_handle_t* tier = MakeTier(device_access ? "tier_host" : "kit_memory");
    PluginInstance* kv = MakeKv(kCfg, {tier});
    mstar_stream_t* stream = HostStream(kv);
    FakeRequest a(1), b(2);
    for (FakeRequest* r : {&a, &b}) ASSERT_TRUE(Add(kv, *r).ok());
    Fill(kv, a, 10);  // 3 pages
    Fill(kv, b, 17);  // 5 pages
    EXPECT_EQ(Offload(kv, 1, 0, stream), 3u);
    EXPECT_EQ(Offload(kv, 2, 0, stream), 5u);
    OverwriteFreePages(kv, 32);
    ReloadEach(kv, {2, 1}, stream);
    EXPECT_EQ(Verify(kv, a), 0);
    EXPECT_EQ(Verify(kv, b), 0);
    kv->host()->stream_release(stream);
  }
}

// A nearer tier that refuses the blocks sends them on to the next (restaged in host memory when
// that one takes host memory only, as kit_memory does), and a reload that misses in the nearer
// tier finds them there, byte for byte, on a stream.
TEST_F(Moving, BlocksANearerTierRefusesGoToTheNextAndComeBackFromIt) {
  FaultyTier* near = MakeFaultyTier("tier_host");
  near->refuse_puts = true;
  near->mode = FaultyTier::kNotFound;
  PluginInstance* kv = MakeKv(kCfg, {&near->handle, MakeTier()});
  mstar_stream_t* stream = HostStream(kv);
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 10);  // 3 pages
  EXPECT_EQ(Offload(kv, 1, 0, stream), 3u);
  OverwriteFreePages(kv, 32);
  ReloadEach(kv, {1}, stream);
  EXPECT_EQ(Verify(kv, a), 0);
  kv->host()->stream_release(stream);
}

// A nearer tier whose whole batch fails does not fail the offload or the reload: the offload's
// blocks go on to the next tier, as refused ones do, and a reload whose nearer tier fails (its
// batch, or a block it lost) reads the farther one.
TEST_F(Moving, ANearerTierThatFailsIsPassedOverByTheOffloadAndTheReload) {
  FaultyTier* near = MakeFaultyTier("tier_host");
  near->fail_put_batches = true;
  mstar_tier_handle_t* far = MakeTier();
  PluginInstance* kv = MakeKv(kCfg, {&near->handle, far});
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 10);  // 3 pages
  for (FaultyTier::Mode mode : {FaultyTier::kSubmitFails, FaultyTier::kDataLoss}) {
    near->mode = FaultyTier::kHealthy;
    ASSERT_EQ(Offload(kv, 1), 3u);
    EXPECT_EQ(TierUsed(far), 3 * kPageBytes);
    EXPECT_EQ(TierUsed(&near->handle), 0u);
    OverwriteFreePages(kv, 32);
    near->mode = mode;
    uint32_t done = 0;
    Status reload = Reload(kv, 1, &done);
    ASSERT_TRUE(reload.ok()) << reload.ToString();
    EXPECT_EQ(done, 1u);
    EXPECT_EQ(Verify(kv, a), 0);
  }
  // A failed tier that cannot say it kept none of the batch (its REMOVEs fail too) is not
  // passed over: a block it kept would be read before the next tier's. The offload fails and
  // the request stays resident, whole.
  near->mode = FaultyTier::kHealthy;
  near->remove_result = MSTAR_ERR_IO;
  uint64_t reclaimed = 0;
  Status failed = TakeStatus(T(kv)->offload(kv->self(), 1, 0, nullptr, &reclaimed));
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("the batch of PUTs failed"), std::string::npos)
      << failed.ToString();
  EXPECT_FALSE(Offloaded(kv, 1));
  EXPECT_EQ(TierUsed(far), 0u);
  EXPECT_EQ(Verify(kv, a), 0);
}

// Blocks a nearer tier refused skip a middle tier without room for them: there they would evict
// another request's blocks (B's, which the middle tier holds). They go to the farthest tier,
// and both requests come back byte-exact.
TEST_F(Moving, RefusedBlocksSkipAFullMiddleTier) {
  FaultyTier* near = MakeFaultyTier("tier_host");
  near->refuse_puts = true;
  near->mode = FaultyTier::kNotFound;
  mstar_tier_handle_t* middle =
      MakeTier("tier_host", "capacity_bytes = " + std::to_string(2 * kPageBytes));
  mstar_tier_handle_t* far = MakeTier();
  PluginInstance* kv = MakeKv(kCfg, {&near->handle, middle, far});
  FakeRequest a(1), b(2);
  for (FakeRequest* r : {&a, &b}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, b, 8);   // 2 pages: the middle tier's capacity
  Fill(kv, a, 10);  // 3 pages
  EXPECT_EQ(Offload(kv, 2), 2u);
  EXPECT_EQ(TierUsed(middle), 2 * kPageBytes);
  EXPECT_EQ(Offload(kv, 1), 3u);
  EXPECT_EQ(TierUsed(middle), 2 * kPageBytes);
  EXPECT_EQ(TierUsed(far), 3 * kPageBytes);
  OverwriteFreePages(kv, 32);
  ReloadEach(kv, {1, 2}, nullptr);
  EXPECT_EQ(Verify(kv, a), 0);
  EXPECT_EQ(Verify(kv, b), 0);
}

// A tier makes room by evicting its least recently used blocks, so an offload larger than the
// farthest tier would evict its own first blocks and report success with them lost. It moves
// only the request's last pages, as many as the tier holds beside the request's blocks already
// there, and those come back byte-exact.
TEST_F(Moving, AnOffloadLargerThanTheFarthestTierMovesOnlyWhatItHolds) {
  mstar_tier_handle_t* tier =
      MakeTier("tier_host", "capacity_bytes = " + std::to_string(4 * kPageBytes));
  PluginInstance* kv = MakeKv(kCfg, {tier});
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 22);  // 6 pages
  EXPECT_EQ(Offload(kv, 1), 4u);
  EXPECT_EQ(Stats(kv).offloaded_units, 4u);
  EXPECT_EQ(TierUsed(tier), 4 * kPageBytes);
  // Offloaded again, it would push its own blocks out of the full tier: nothing moves.
  EXPECT_EQ(Offload(kv, 1), 0u);
  EXPECT_EQ(Stats(kv).offloaded_units, 4u);
  OverwriteFreePages(kv, 24);  // the 6 free pages
  uint32_t done = 0;
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(Verify(kv, a), 0);
}

// A tier full of other requests' blocks makes room by evicting its least recently used ones: for
// a request offloaded a second time, its own blocks of the first offload. A request with blocks
// offloaded already moves only what a tier takes without evicting (here nothing: the engine
// tries another victim), and every block it has offloaded comes back byte-exact.
TEST_F(Moving, ALaterOffloadNeverEvictsTheRequestsEarlierBlocksFromAFullTier) {
  mstar_tier_handle_t* tier =
      MakeTier("tier_host", "capacity_bytes = " + std::to_string(4 * kPageBytes));
  PluginInstance* kv = MakeKv(kCfg, {tier});
  FakeRequest a(1), b(2);
  for (FakeRequest* r : {&a, &b}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 22);                   // 6 pages
  Fill(kv, b, 8);                    // 2 pages: the pool is full
  EXPECT_EQ(Offload(kv, 1, 2), 2u);  // A's pages 4-5
  EXPECT_EQ(Offload(kv, 2, 2), 2u);  // B's: the tier is full, A's blocks its least recently used
  EXPECT_EQ(TierUsed(tier), 4 * kPageBytes);
  const uint64_t moved = Offload(kv, 1, 2);
  EXPECT_EQ(Stats(kv).offloaded_units, 4u + moved);
  OverwriteFreePages(kv, static_cast<uint32_t>(kPs * (4 + moved)));  // every free page
  uint32_t done = 0;
  Status s = Reload(kv, 1, &done);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(Verify(kv, a), 0);
  ReloadEach(kv, {2}, nullptr);
  EXPECT_EQ(Verify(kv, b), 0);
}

// An offload that would free nothing moves nothing (0 means nothing moved, so the host would not
// know the request is offloaded): here every page of A is held by B too, a prefix hit that came
// after A was chosen as a victim. A stays resident and steps on.
TEST_F(Moving, AnOffloadThatWouldFreeNothingMovesNothing) {
  PluginInstance* kv = MakeKv(kCfg, {MakeTier()});
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8}), b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  for (FakeRequest* r : {&a, &b}) ASSERT_TRUE(Add(kv, *r).ok());
  Fill(kv, a, 8);  // 2 full pages, keyed
  ASSERT_EQ(Step(kv, {&b}, {9}), (std::vector<uint32_t>{0}));
  ASSERT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{8}));
  EXPECT_EQ(Offload(kv, 1), 0u);
  EXPECT_FALSE(Offloaded(kv, 1));
  EXPECT_EQ(Stats(kv).offloaded_units, 0u);
  EXPECT_EQ(Verify(kv, a), 0);
}

// A block lost after others were copied fails the reload with DATA_LOSS and moves nothing: the
// request stays offloaded, and the free pages the earlier blocks were written into stay free.
TEST_F(Moving, ABlockLostPartWayFailsTheReloadAndMovesNothing) {
  FaultyTier* faulty = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&faulty->handle});
  mstar_stream_t* stream = HostStream(kv);
  FakeRequest a(1), b(2);
  ASSERT_TRUE(Add(kv, b).ok());
  Fill(kv, b, 8);  // 2 pages that stay
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 12);  // 3 pages
  ASSERT_EQ(Offload(kv, 1, 0, stream), 3u);
  faulty->mode = FaultyTier::kDataLoss;  // the third block
  faulty->healthy_gets = 2;
  uint32_t done = 0;
  Status reload = Reload(kv, 1, &done, stream);
  EXPECT_EQ(reload.code(), Code::kDataLoss) << reload.ToString();
  EXPECT_NE(reload.message().find("lost page 2"), std::string::npos) << reload.ToString();
  EXPECT_TRUE(Offloaded(kv, 1));
  EXPECT_EQ(Stats(kv).used_units, 2u) << "b's pages only";
  EXPECT_EQ(Verify(kv, b), 0);
  OverwriteFreePages(kv, 24);           // the pages the failed reload wrote are free again
  faulty->mode = FaultyTier::kHealthy;  // the blocks are all still there: the reload succeeds
  ASSERT_TRUE(Reload(kv, 1, &done, stream).ok());
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(Verify(kv, a), 0);
  kv->host()->stream_release(stream);
}

// An offload that fails leaves nothing in the tiers: here the near tier takes page 1 of A and
// refuses page 0, which the far tier refuses too. A then grows into page 1, offloads into the
// far tier (the near one refuses all) and reloads: what comes back is the page as it was at the
// second offload, not the block the failed one wrote to the nearer tier. When the near tier
// cannot remove that block either, it stays there (logged), but no reload reads it: each
// offload writes under keys of its own.
TEST_F(Moving, AFailedOffloadLeavesNoBlockBehindForALaterReloadToRead) {
  for (bool removes_fail : {false, true}) {
    SCOPED_TRACE(removes_fail ? "the near tier's removes fail" : "removes succeed");
    FaultyTier* near = MakeFaultyTier();
    FaultyTier* far = MakeFaultyTier();
    PluginInstance* kv = MakeKv(kCfg, {&near->handle, &far->handle});
    FakeRequest a(1);
    ASSERT_TRUE(Add(kv, a).ok());
    Fill(kv, a, 6);  // page 0 full, page 1 holding 2 tokens
    near->refuse_puts = true;
    near->refusals = 1;
    far->refuse_puts = true;
    if (removes_fail) near->remove_result = MSTAR_ERR_IO;
    uint64_t reclaimed = 0;
    Status failed = TakeStatus(T(kv)->offload(kv->self(), 1, 0, nullptr, &reclaimed));
    EXPECT_EQ(failed.code(), Code::kResourceExhausted) << failed.ToString();
    EXPECT_NE(failed.message().find("tier #1 of 2 refused page 0"), std::string::npos)
        << failed.ToString();
    EXPECT_FALSE(Offloaded(kv, 1));
    const uint64_t left = removes_fail ? kPageBytes : 0;  // page 1's block of the failed offload
    EXPECT_EQ(TierUsed(&near->handle), left);
    EXPECT_EQ(TierUsed(&far->handle), 0u);
    EXPECT_EQ(Verify(kv, a), 0);

    Fill(kv, a, 1);  // position 6, in page 1
    near->refusals = UINT32_MAX;
    far->refuse_puts = false;
    EXPECT_EQ(Offload(kv, 1), 2u);
    EXPECT_EQ(TierUsed(&near->handle), left);
    EXPECT_EQ(TierUsed(&far->handle), 2 * kPageBytes);
    OverwriteFreePages(kv, 32);
    ReloadEach(kv, {1}, nullptr);
    EXPECT_EQ(Verify(kv, a), 0);
    EXPECT_EQ(Probe(kv, a).len, 7);
    EXPECT_EQ(Offload(kv, 1), 2u);
    T(kv)->remove_request(kv->self(), 1);
    EXPECT_EQ(TierUsed(&near->handle), left);
    EXPECT_EQ(TierUsed(&far->handle), 0u);
    EXPECT_EQ(Stats(kv).offloaded_units, 0u);
  }
}

// An offload is all or nothing per request: the uncond label's blocks land, the cond label's
// are refused, and the request stays resident in both labels, its bytes intact and nothing of
// it left in the tier; once the tier takes blocks again it offloads and comes back whole.
TEST_F(Moving, AnOffloadThatFailsForOneLabelLeavesEveryLabelResident) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv =
      MakeKv(std::string(kCfg) + "labels = [\"cond\", \"uncond\"]\n", {&tier->handle});
  const std::vector<std::string> both = {"", "uncond."};
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 6, both);  // 2 pages per label
  tier->refuse_puts = true;
  tier->healthy_puts = 2;  // uncond's two pages (the last label goes first)
  uint64_t reclaimed = 0;
  Status failed = TakeStatus(T(kv)->offload(kv->self(), 1, 0, nullptr, &reclaimed));
  EXPECT_EQ(failed.code(), Code::kResourceExhausted) << failed.ToString();
  EXPECT_FALSE(Offloaded(kv, 1));
  EXPECT_EQ(Stats(kv).offloaded_units, 0u);
  EXPECT_EQ(Stats(kv).used_units, 4u);
  EXPECT_EQ(TierUsed(&tier->handle), 0u) << "uncond's blocks are removed again";
  EXPECT_EQ(Verify(kv, a, both), 0);

  tier->refuse_puts = false;
  EXPECT_EQ(Offload(kv, 1), 4u);
  EXPECT_TRUE(Offloaded(kv, 1));
  OverwriteFreePages(kv, 16, both);
  ReloadEach(kv, {1}, nullptr);
  EXPECT_EQ(Verify(kv, a, both), 0);
  EXPECT_EQ(TierUsed(&tier->handle), 0u);
}

// A tier that fails to remove a block (a disk tier's unlink failing) is logged with the tier,
// the page and the key, and the other tiers still remove theirs.
TEST_F(Moving, ARemoveATierFailsIsLoggedAndTheOtherTiersStillRemove) {
  test::LogCapture logs;
  FaultyTier* near = MakeFaultyTier();
  FaultyTier* far = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&near->handle, &far->handle});
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 6);
  near->refuse_puts = true;
  near->healthy_puts = 1;  // page 0 in the near tier, page 1 in the far one
  EXPECT_EQ(Offload(kv, 1), 2u);
  EXPECT_EQ(TierUsed(&near->handle), kPageBytes);
  EXPECT_EQ(TierUsed(&far->handle), kPageBytes);
  near->remove_result = MSTAR_ERR_IO;
  T(kv)->remove_request(kv->self(), 1);
  EXPECT_EQ(Stats(kv).offloaded_units, 0u);
  EXPECT_EQ(TierUsed(&far->handle), 0u);
  EXPECT_EQ(TierUsed(&near->handle), kPageBytes) << "the failed remove left it";
  bool logged = false;
  for (const std::string& line : logs.Lines()) {
    logged =
        logged ||
        (line.find("tier #0 of 2") != std::string::npos &&
         line.find("page 0") != std::string::npos && line.find("request 1") != std::string::npos &&
         line.find("(IO)") != std::string::npos && line.find("key ") != std::string::npos);
  }
  EXPECT_TRUE(logged) << ::testing::PrintToString(logs.Lines());
}

// The same across labels: a block of the uncond label lost after the cond label's blocks were
// read fails the reload with both labels still offloaded and no page taken.
TEST_F(Moving, ABlockLostInALaterLabelFailsTheReloadAndMovesNoLabel) {
  FaultyTier* faulty = MakeFaultyTier();
  PluginInstance* kv =
      MakeKv(std::string(kCfg) + "labels = [\"cond\", \"uncond\"]\n", {&faulty->handle});
  const std::vector<std::string> both = {"", "uncond."};
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 6, both);  // 2 pages per label
  ASSERT_EQ(Offload(kv, 1), 4u);
  faulty->mode = FaultyTier::kDataLoss;
  faulty->healthy_gets = 2;  // cond's blocks
  uint32_t done = 0;
  Status reload = Reload(kv, 1, &done);
  EXPECT_EQ(reload.code(), Code::kDataLoss) << reload.ToString();
  EXPECT_NE(reload.message().find("of label 'uncond'"), std::string::npos) << reload.ToString();
  EXPECT_TRUE(Offloaded(kv, 1));
  EXPECT_EQ(Stats(kv).offloaded_units, 4u);
  EXPECT_EQ(Stats(kv).used_units, 0u);
  faulty->mode = FaultyTier::kHealthy;
  ReloadEach(kv, {1}, nullptr);
  EXPECT_EQ(Verify(kv, a, both), 0);
  EXPECT_EQ(TierUsed(&faulty->handle), 0u);
}

TEST_F(Moving, NoTiersMeansNotEvictable) {
  PluginInstance* kv = MakeKv(kCfg);
  mstar_resource_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr};
  ASSERT_TRUE(TakeStatus(T(kv)->info(kv->self(), &info)).ok());
  EXPECT_EQ(info.flags & MSTAR_RESOURCE_EVICTABLE, 0u);
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 5);
  EXPECT_EQ(Offload(kv, 1), 0u);
  EXPECT_FALSE(Offloaded(kv, 1));
}

// A tier whose whole batch of GETs fails (its submit returns an error) fails the reload with
// DATA_LOSS, so the host recomputes the request instead of failing it, and moves nothing: the
// request stays offloaded and a later reload brings it back.
TEST_F(Moving, ATierWhoseBatchFailsFailsTheReloadAsDataLossAndMovesNothing) {
  FaultyTier* tier = MakeFaultyTier();
  PluginInstance* kv = MakeKv(kCfg, {&tier->handle});
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Fill(kv, a, 10);
  EXPECT_EQ(Offload(kv, 1), 3u);
  tier->mode = FaultyTier::kSubmitFails;
  uint32_t done = 0;
  Status failed = Reload(kv, 1, &done);
  EXPECT_EQ(failed.code(), Code::kDataLoss) << failed.ToString();
  EXPECT_NE(failed.message().find("the batch of GETs failed"), std::string::npos)
      << failed.ToString();
  EXPECT_TRUE(Offloaded(kv, 1));
  tier->mode = FaultyTier::kHealthy;
  ASSERT_TRUE(Reload(kv, 1, &done).ok());
  EXPECT_EQ(done, 1u);
  EXPECT_EQ(Verify(kv, a), 0);
}

TEST_F(Moving, ATierThatLostTheBlocksFailsTheReload) {
  for (auto mode : {FaultyTier::kDataLoss, FaultyTier::kNotFound}) {
    FaultyTier* tier = MakeFaultyTier();
    PluginInstance* kv = MakeKv(kCfg, {&tier->handle});
    FakeRequest a(1);
    ASSERT_TRUE(Add(kv, a).ok());
    Fill(kv, a, 6);
    EXPECT_EQ(Offload(kv, 1), 2u);
    tier->mode = mode;
    uint32_t done = 0;
    Status s = Reload(kv, 1, &done);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), Code::kDataLoss);
    const char* why = mode == FaultyTier::kDataLoss ? "(DATA_LOSS)" : "(NOT_FOUND)";
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("cannot reload request 1"), std::string::npos) << s.message();
    EXPECT_TRUE(Offloaded(kv, 1));        // nothing moved
    EXPECT_EQ(Stats(kv).used_units, 0u);  // and no page was taken
    T(kv)->remove_request(kv->self(), 1);
    EXPECT_EQ(Stats(kv).offloaded_units, 0u);
  }
}

TEST_F(Moving, PublishedPagesAreTakenInByAnotherInstance) {
  PluginInstance* source = MakeKv(kCfg);
  PluginInstance* target = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5});
  ASSERT_TRUE(Add(source, a).ok());
  Fill(source, a, 5);
  Fill(source, a, 4);
  mstar_bytes_t bytes;
  ASSERT_TRUE(TakeStatus(T(source)->publish(source->self(), 1, &bytes)).ok());
  EXPECT_GT(bytes.data.size(), 3u * 2 * kLayers * kPs * kHeads * kDim * 4);

  // Geometry that does not match is refused, naming the field.
  PluginInstance* wrong = MakeKv(
      "page_size = 8\nnum_pages = 8\nlayers = 2\nkv_heads = 2\n"
      "head_dim = 3\n");
  mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
  Status refused = TakeStatus(
      T(wrong)->check_ready(wrong->self(), &a.info, bytes.data.data(), bytes.data.size(), &admit));
  EXPECT_NE(refused.message().find("page_size 4 but this cache has 8"), std::string::npos)
      << refused.ToString();

  // A full target waits for capacity.
  FakeRequest big(9);
  ASSERT_TRUE(Add(target, big).ok());
  Fill(target, big, 24);
  ASSERT_TRUE(TakeStatus(T(target)->check_ready(target->self(), &a.info, bytes.data.data(),
                                                bytes.data.size(), &admit))
                  .ok());
  EXPECT_EQ(admit.outcome, MSTAR_ADMIT_NOT_READY);
  EXPECT_EQ(admit.wait_reason, MSTAR_WAIT_CAPACITY);
  EXPECT_EQ(admit.units_short, 1u);
  T(target)->remove_request(target->self(), 9);
  ASSERT_TRUE(TakeStatus(T(target)->check_ready(target->self(), &a.info, bytes.data.data(),
                                                bytes.data.size(), &admit))
                  .ok());
  EXPECT_EQ(admit.outcome, MSTAR_ADMIT_READY);
  EXPECT_EQ(Probe(target, a).len, 9);
  EXPECT_EQ(Verify(target, a), 0);
  // Empty bytes: nothing to take in.
  FakeRequest other(5);
  ASSERT_TRUE(
      TakeStatus(T(target)->check_ready(target->self(), &other.info, nullptr, 0, &admit)).ok());
  EXPECT_EQ(admit.outcome, MSTAR_ADMIT_READY);
  // The target continues the request, and its prefix chain came along: a new request with the
  // same prompt hits A's first page there.
  Fill(target, a, 1);
  EXPECT_EQ(Verify(target, a), 0);
  int32_t first_page = Probe(target, a).pages.at(0);
  FakeRequest b(2, Tokens{1, 2, 3, 4, 5});
  ASSERT_TRUE(Add(target, b).ok());
  ASSERT_EQ(Step(target, {&b}, {5}), (std::vector<uint32_t>{0}));
  EXPECT_EQ(I32(*last_view_, "cached"), (std::vector<int32_t>{4}));
  EXPECT_EQ(I32(*last_view_, "block_table").at(0), first_page);
}

}  // namespace
}  // namespace mstar::kvtest
