// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged's resident deltas: a follower instance that replays the leader's deltas ends in the
// same resident state (each delta carries the leader's state digest, which the follower checks
// after replaying the moves before it), including offloads and reloads that the follower performs
// on its own tier; a follower that diverged refuses with FAILED_PRECONDITION and a reason.
#include <random>
#include <set>

#include "host/host_objects.h"
#include "kv_fixture.h"

namespace mstar::kvtest {
namespace {

const char* kCfg =
    "page_size = 4\nnum_pages = 20\n"
    "layers = 1\nkv_heads = 1\nhead_dim = 2\nresident_deltas = true\n";

class Delta : public KvTest {
 protected:
  std::vector<uint8_t> Take(PluginInstance* kv) {
    mstar_bytes_t bytes;
    EXPECT_TRUE(TakeStatus(T(kv)->take_resident_delta(kv->self(), &bytes)).ok());
    return bytes.data;
  }
  Status Apply(PluginInstance* kv, const std::vector<uint8_t>& delta, uint64_t* consumed) {
    uint32_t complete = 0;
    Status s = TakeStatus(
        T(kv)->apply_resident_delta(kv->self(), delta.data(), delta.size(), consumed, &complete));
    if (s.ok()) {
      EXPECT_EQ(complete, 1u);
    }
    return s;
  }
};

TEST_F(Delta, FollowerReplaysRandomWorkloadsToTheSameState) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    PluginInstance* leader = MakeKv(kCfg, {MakeTier()});
    PluginInstance* follower = MakeKv(kCfg, {MakeTier()});
    std::mt19937 rng(seed);
    std::map<mstar_request_id_t, std::unique_ptr<FakeRequest>> live;
    std::set<mstar_request_id_t> offloaded;
    mstar_request_id_t next = 1;
    uint64_t move_bytes = 0;
    for (int round = 0; round < 40; ++round) {
      for (int op = 0; op < 8; ++op) {
        uint32_t choice = rng() % 12;
        if (choice < 2 || live.empty()) {
          auto r = std::make_unique<FakeRequest>(
              next, Tokens{7, 7, 7, 7, 8, 8, 8, 8, static_cast<int32_t>(rng() % 4)});
          ASSERT_TRUE(Add(leader, *r).ok());
          live[next++] = std::move(r);
        } else if (choice < 3) {
          auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
          T(leader)->remove_request(leader->self(), it->first);
          offloaded.erase(it->first);
          live.erase(it);
        } else if (choice < 5) {
          auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
          uint64_t reclaimed = 0;
          ASSERT_TRUE(TakeStatus(T(leader)->offload(leader->self(), it->first, rng() % 3, nullptr,
                                                    &reclaimed))
                          .ok());
          uint32_t flag = 0;
          ASSERT_TRUE(TakeStatus(T(leader)->is_offloaded(leader->self(), it->first, &flag)).ok());
          if (flag != 0) offloaded.insert(it->first);
        } else if (choice < 6 && !offloaded.empty()) {
          mstar_request_id_t id = *offloaded.begin();
          uint32_t done = 0;
          ASSERT_TRUE(TakeStatus(T(leader)->reload(leader->self(), id, nullptr, &done)).ok());
          if (done != 0) offloaded.erase(id);
        } else {
          std::vector<FakeRequest*> batch;
          std::vector<uint32_t> tokens;
          std::vector<uint8_t> ok;
          for (auto& [id, r] : live) {
            if (offloaded.count(id) != 0 || rng() % 2 == 0) continue;
            batch.push_back(r.get());
            tokens.push_back(1 + rng() % 9);
            ok.push_back(rng() % 6 != 0 ? 1 : 0);
          }
          if (!batch.empty()) Step(leader, batch, tokens, ok, nullptr, nullptr, rng() % 7 == 0);
        }
      }
      std::vector<uint8_t> delta = Take(leader);
      uint64_t consumed = 0;
      Status applied = Apply(follower, delta, &consumed);
      ASSERT_TRUE(applied.ok()) << "seed " << seed << " round " << round << ": "
                                << applied.ToString();
      ASSERT_EQ(consumed, delta.size());
      // Every delta ends with a digest record (a 21-byte header and 32 bytes), moves or not.
      ASSERT_GE(delta.size(), 53u);
      move_bytes += delta.size() - 53;
    }
    EXPECT_GT(move_bytes, 1000u) << "the workload moved pages (bytes of move records)";
    // The follower tracked the same pages: the same capacity figures.
    mstar_resource_stats_t a = Stats(leader), b = Stats(follower);
    EXPECT_EQ(a.used_units, b.used_units);
    EXPECT_EQ(a.cached_units, b.cached_units);
    EXPECT_EQ(a.offloaded_units, b.offloaded_units);
  }
}

// A request removed while offloaded leaves no block in the follower's tier either: replaying
// the removal drops the follower's copies of the offloaded pages, as the leader drops its own.
TEST_F(Delta, AFollowerRemovesTheTierBlocksOfARequestRemovedWhileOffloaded) {
  mstar_tier_handle_t* leader_tier = MakeTier("tier_host");
  mstar_tier_handle_t* follower_tier = MakeTier("tier_host");
  PluginInstance* leader = MakeKv(kCfg, {leader_tier});
  PluginInstance* follower = MakeKv(kCfg, {follower_tier});
  FakeRequest a(1);
  ASSERT_TRUE(Add(leader, a).ok());
  Step(leader, {&a}, {6});
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->offload(leader->self(), 1, 0, nullptr, &reclaimed)).ok());
  EXPECT_EQ(reclaimed, 2u);
  uint64_t consumed = 0;
  Status applied = Apply(follower, Take(leader), &consumed);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(Stats(follower).offloaded_units, 2u);
  const uint64_t blocks = TierUsed(follower_tier);
  EXPECT_GT(blocks, 0u);
  EXPECT_EQ(blocks, TierUsed(leader_tier));

  T(leader)->remove_request(leader->self(), 1);
  applied = Apply(follower, Take(leader), &consumed);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(Stats(follower).offloaded_units, 0u);
  EXPECT_EQ(TierUsed(leader_tier), 0u);
  EXPECT_EQ(TierUsed(follower_tier), 0u);
}

// The leader takes an offloaded request's full pages back from its prefix cache and reads only
// its partial page; the follower, replaying the same reload, reads only that block as well
// (a second read from its tier would fail).
TEST_F(Delta, AFollowerReadsOnlyTheBlocksTheLeaderRead) {
  FaultyTier* follower_tier = MakeFaultyTier();
  PluginInstance* leader = MakeKv(kCfg, {MakeTier()});
  PluginInstance* follower = MakeKv(kCfg, {&follower_tier->handle});
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  ASSERT_TRUE(Add(leader, a).ok());
  ASSERT_EQ(Step(leader, {&a}, {10}), (std::vector<uint32_t>{0}));
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->offload(leader->self(), 1, 0, nullptr, &reclaimed)).ok());
  EXPECT_EQ(reclaimed, 3u);
  uint64_t consumed = 0;
  Status applied = Apply(follower, Take(leader), &consumed);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(follower_tier->put_data.size(), 3u);

  follower_tier->mode = FaultyTier::kDataLoss;
  follower_tier->healthy_gets = 1;
  uint32_t done = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->reload(leader->self(), 1, nullptr, &done)).ok());
  ASSERT_EQ(done, 1u);
  applied = Apply(follower, Take(leader), &consumed);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(follower_tier->get_data.size(), 1u);
  EXPECT_EQ(Stats(follower).used_units, 3u);
  EXPECT_EQ(Stats(follower).cached_units, 0u);
}

// A follower whose tier lost a block refuses the leader's reload and changes nothing: the
// request stays offloaded there, no page is taken, and its blocks stay in the tier.
TEST_F(Delta, AFollowerReloadThatCannotReadChangesNothing) {
  FaultyTier* follower_tier = MakeFaultyTier();
  PluginInstance* leader = MakeKv(kCfg, {MakeTier()});
  PluginInstance* follower = MakeKv(kCfg, {&follower_tier->handle});
  FakeRequest a(1);
  ASSERT_TRUE(Add(leader, a).ok());
  Step(leader, {&a}, {6});
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->offload(leader->self(), 1, 0, nullptr, &reclaimed)).ok());
  uint64_t consumed = 0;
  Status applied = Apply(follower, Take(leader), &consumed);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  ASSERT_EQ(follower_tier->put_data.size(), 2u);
  const uint64_t blocks = TierUsed(&follower_tier->handle);
  ASSERT_GT(blocks, 0u);

  follower_tier->mode = FaultyTier::kDataLoss;
  uint32_t done = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->reload(leader->self(), 1, nullptr, &done)).ok());
  ASSERT_EQ(done, 1u);
  applied = Apply(follower, Take(leader), &consumed);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.code(), Code::kDataLoss) << applied.ToString();
  EXPECT_EQ(Stats(follower).used_units, 0u);
  EXPECT_EQ(Stats(follower).offloaded_units, 2u);
  EXPECT_EQ(TierUsed(&follower_tier->handle), blocks) << "the blocks stay until the request goes";
}

// A single rank has no follower: unless asked to, it logs no move (the log would grow with every
// step, unread), does not declare resident deltas, and says so when asked for one.
TEST_F(Delta, ASingleRankRecordsNoMovesUnlessAsked) {
  PluginInstance* kv =
      MakeKv("page_size = 4\nnum_pages = 20\nlayers = 1\nkv_heads = 1\nhead_dim = 2\n");
  mstar_resource_info_t info{};
  info.struct_size = sizeof(info);
  ASSERT_TRUE(TakeStatus(T(kv)->info(kv->self(), &info)).ok());
  EXPECT_EQ(info.flags & MSTAR_RESOURCE_RESIDENT_DELTA, 0u);
  FakeRequest a(1);
  ASSERT_TRUE(Add(kv, a).ok());
  Step(kv, {&a}, {6});
  mstar_bytes_t bytes;
  Status taken = TakeStatus(T(kv)->take_resident_delta(kv->self(), &bytes));
  EXPECT_EQ(taken.code(), Code::kFailedPrecondition) << taken.ToString();
  EXPECT_NE(taken.message().find("resident_deltas = true"), std::string::npos) << taken.message();
  PluginInstance* asked = MakeKv(kCfg);
  ASSERT_TRUE(TakeStatus(T(asked)->info(asked->self(), &info)).ok());
  EXPECT_NE(info.flags & MSTAR_RESOURCE_RESIDENT_DELTA, 0u);
}

TEST_F(Delta, DivergedFollowerRefuses) {
  PluginInstance* leader = MakeKv(kCfg);
  PluginInstance* follower = MakeKv(kCfg);
  FakeRequest a(1);
  ASSERT_TRUE(Add(leader, a).ok());
  Step(leader, {&a}, {6});
  uint64_t consumed = 0;
  ASSERT_TRUE(Apply(follower, Take(leader), &consumed).ok());

  // The follower does work of its own: the leader's next move no longer fits.
  FakeRequest stray(50);
  ASSERT_TRUE(Add(follower, stray).ok());
  Step(follower, {&stray}, {4});
  Step(leader, {&a}, {4});
  Status s = Apply(follower, Take(leader), &consumed);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("resident state diverges at move #"), std::string::npos)
      << s.message();

  // A replica that skipped a delta is told which move it expected.
  PluginInstance* late = MakeKv(kCfg);
  Step(leader, {&a}, {1});
  s = Apply(late, Take(leader), &consumed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("this replica expects #0"), std::string::npos) << s.message();
}

TEST_F(Delta, DigestCatchesDifferentStateBehindTheSameMoves) {
  PluginInstance* leader = MakeKv(kCfg);
  PluginInstance* follower = MakeKv(kCfg);
  FakeRequest a(1);
  ASSERT_TRUE(Add(leader, a).ok());
  Step(leader, {&a}, {6});
  std::vector<uint8_t> delta = Take(leader);
  // Flip the length the leader recorded (the last kSetLen) before the follower replays it: every
  // move still applies, but the digest that ends the delta no longer matches.
  ASSERT_GT(delta.size(), 32u + 21u);
  size_t digest_at = delta.size() - 32 - 21;
  size_t set_len = 0;
  for (size_t pos = 0; pos < digest_at;) {
    uint8_t kind = delta[pos];
    size_t payload = kind == 3 || kind == 4 || kind == 8 || kind == 7 ? 4
                     : kind == 5                                      ? 8
                     : kind == 6                                      ? 36
                                                                      : 0;
    if (kind == 5) set_len = pos + 21;
    pos += 21 + payload;
  }
  ASSERT_NE(set_len, 0u);
  delta[set_len] ^= 1;  // 6 -> 7 tokens: still within the pages held
  uint64_t consumed = 0;
  Status s = Apply(follower, delta, &consumed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("state digest differs from the leader's"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace mstar::kvtest
