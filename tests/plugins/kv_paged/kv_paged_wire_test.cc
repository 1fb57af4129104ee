// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged's two wire formats read bytes another worker wrote: published state (check_ready takes
// a request in) and resident deltas (apply_resident_delta replays a leader's moves). Both are
// fed real bytes mutated every way a damaged or hostile sender could: cut at every length, every
// byte-aligned 32-bit field set to 0xFFFFFFFF and 0x7FFFFFFF, and thousands of random byte flips
// (fixed seeds). Each mutant must be taken in or refused with an error; nothing may crash (the
// CI runs this under AddressSanitizer), ask for absurd memory, or leave the instance unusable.
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>

#include "core/fault_injection.h"
#include "host/host_objects.h"
#include "kv_fixture.h"

namespace mstar::kvtest {
namespace {

const char* kCfg =
    "page_size = 4\nnum_pages = 16\n"
    "layers = 1\nkv_heads = 1\nhead_dim = 2\nresident_deltas = true\n";

using Bytes = std::vector<uint8_t>;

// Every mutant of bytes described above.
std::vector<Bytes> Mutants(const Bytes& bytes, uint32_t seed, int flips) {
  std::vector<Bytes> out;
  for (size_t n = 0; n < bytes.size(); ++n) out.emplace_back(bytes.begin(), bytes.begin() + n);
  for (uint32_t value : {0xFFFFFFFFu, 0x7FFFFFFFu}) {
    for (size_t at = 0; at + 4 <= bytes.size(); ++at) {
      Bytes m = bytes;
      std::memcpy(m.data() + at, &value, 4);
      out.push_back(std::move(m));
    }
  }
  std::mt19937 rng(seed);
  for (int i = 0; i < flips; ++i) {
    Bytes m = bytes;
    for (uint32_t k = 0, count = 1 + rng() % 4; k < count; ++k)
      m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    out.push_back(std::move(m));
  }
  return out;
}

// A delta record: kind u8, move number u64, request u64, label u32, then a payload by kind.
constexpr size_t kRecordHeader = 21;
constexpr uint8_t kSetLen = 5;
constexpr uint8_t kReload = 9;
constexpr uint8_t kDigest = 10;

// Where each record of delta starts, walking it record by record.
std::vector<size_t> Records(const Bytes& delta) {
  std::vector<size_t> starts;
  size_t at = 0;
  while (at + kRecordHeader <= delta.size()) {
    starts.push_back(at);
    size_t payload = 0;
    switch (delta[at]) {
      case 3:
      case 4:
      case 7:
      case 8: payload = 4; break;    // append, truncate, evict, offload
      case 5: payload = 8; break;    // set_len
      case 6: payload = 36; break;   // cache insert
      case 10: payload = 32; break;  // digest
      case 9: {                      // reload
        uint32_t n = 0;
        std::memcpy(&n, delta.data() + at + kRecordHeader, 4);
        payload = 4 + 4 * static_cast<size_t>(n);
        break;
      }
      default: break;  // add, remove
    }
    at += kRecordHeader + payload;
  }
  return starts;
}

// Where the first record of kind starts in delta.
std::optional<size_t> FindRecord(const Bytes& delta, uint8_t kind) {
  for (size_t at : Records(delta)) {
    if (delta[at] == kind) return at;
  }
  return std::nullopt;
}

class Wire : public KvTest {
 protected:
  // What an instance of cfg publishes for a request of 3 tokens, one step.
  Bytes PublishThreeTokens(const std::string& cfg) {
    PluginInstance* source = MakeKv(cfg);
    FakeRequest a(1, Tokens{1, 2, 3});
    EXPECT_TRUE(Add(source, a).ok());
    Step(source, {&a}, {3});
    mstar_bytes_t published;
    EXPECT_TRUE(TakeStatus(T(source)->publish(source->self(), 1, &published)).ok());
    return published.data;
  }
  Bytes TakeDelta(PluginInstance* kv) {
    mstar_bytes_t bytes;
    EXPECT_TRUE(TakeStatus(T(kv)->take_resident_delta(kv->self(), &bytes)).ok());
    return bytes.data;
  }
  Status ApplyDelta(PluginInstance* kv, const Bytes& delta) {
    uint64_t consumed = 0;
    uint32_t complete = 0;
    Status s = TakeStatus(
        T(kv)->apply_resident_delta(kv->self(), delta.data(), delta.size(), &consumed, &complete));
    EXPECT_LE(consumed, delta.size());
    return s;
  }
  // A leader's delta that holds every kind of move: sequences added, appended, cached, offloaded,
  // reloaded, truncated and removed.
  Bytes WorkloadDelta(PluginInstance* leader) {
    FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
    FakeRequest b(2, Tokens{1, 2, 3, 4, 9, 9});
    EXPECT_TRUE(Add(leader, a).ok());
    EXPECT_TRUE(Add(leader, b).ok());
    Step(leader, {&a, &b}, {9, 6});
    uint64_t reclaimed = 0;
    EXPECT_TRUE(TakeStatus(T(leader)->offload(leader->self(), 1, 0, nullptr, &reclaimed)).ok());
    uint32_t done = 0;
    EXPECT_TRUE(TakeStatus(T(leader)->reload(leader->self(), 1, nullptr, &done)).ok());
    EXPECT_EQ(done, 1u);
    Step(leader, {&a}, {3}, {0});  // a failed step: its pages are dropped again
    T(leader)->remove_request(leader->self(), 2);
    return TakeDelta(leader);
  }
};

// A delta the host could not take (bytes_append out of memory) is not lost: the moves stay in
// the leader's log, and the next take hands them to the follower, which ends in the same state.
TEST_F(Wire, ADeltaTheHostCouldNotTakeIsHandedOutAgain) {
  PluginInstance* leader = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(Add(leader, a).ok());
  Step(leader, {&a}, {6});
  ArmFault(FaultSite::kAllocation, 1);
  mstar_bytes_t lost;
  Status failed = TakeStatus(T(leader)->take_resident_delta(leader->self(), &lost));
  DisarmFaults();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.code(), Code::kResourceExhausted) << failed.ToString();
  const Bytes delta = TakeDelta(leader);
  PluginInstance* follower = MakeKv(kCfg);
  Status applied = ApplyDelta(follower, delta);
  EXPECT_TRUE(applied.ok()) << applied.ToString();      // its digest matches the leader's state
  EXPECT_TRUE(FindRecord(delta, kSetLen).has_value());  // the step's moves, not just a digest
}

TEST_F(Wire, DamagedPublishedStateIsRefusedOrTakenInAndNothingLeaks) {
  PluginInstance* source = MakeKv(kCfg);
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5});
  ASSERT_TRUE(Add(source, a).ok());
  Step(source, {&a}, {5});
  Step(source, {&a}, {4});
  mstar_bytes_t published;
  ASSERT_TRUE(TakeStatus(T(source)->publish(source->self(), 1, &published)).ok());

  PluginInstance* target = MakeKv(kCfg);
  mstar_request_id_t next = 100;
  size_t refused = 0, taken = 0;
  for (const Bytes& mutant : Mutants(published.data, 7, 3000)) {
    FakeRequest r(next++);
    mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
    Status s = TakeStatus(
        T(target)->check_ready(target->self(), &r.info, mutant.data(), mutant.size(), &admit));
    if (!s.ok()) {
      ++refused;
      EXPECT_FALSE(s.message().empty());
    } else {
      ++taken;
      EXPECT_NE(admit.outcome, 99u) << "check_ready said nothing";
    }
    T(target)->remove_request(target->self(), r.info.request_id);
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(taken, 0u);  // flips inside the page data are still well-formed state
  // Every page came back, and the instance still serves requests.
  EXPECT_EQ(Stats(target).used_units, 0u);
  FakeRequest fresh(1, Tokens{1, 2, 3, 4, 5});
  ASSERT_TRUE(Add(target, fresh).ok());
  EXPECT_EQ(Step(target, {&fresh}, {5}), (std::vector<uint32_t>{MSTAR_ADMIT_READY}));
  // The untouched state is still taken in whole.
  FakeRequest again(2);
  mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
  ASSERT_TRUE(TakeStatus(T(target)->check_ready(target->self(), &again.info, published.data.data(),
                                                published.data.size(), &admit))
                  .ok());
  EXPECT_EQ(admit.outcome, MSTAR_ADMIT_READY);
  EXPECT_EQ(Probe(target, again).len, 9);
}

// State of two labels is taken in once: a second check_ready (the engine asks at every
// admission) finds it there and takes nothing more. Labels advance together, so state whose
// labels differ in length (here the first emptied) is refused, with nothing taken.
TEST_F(Wire, StateIsTakenInOnceAndLabelsOfDifferentLengthsAreRefused) {
  const std::string cfg = std::string(kCfg) + "labels = [\"cond\", \"uncond\"]\n";
  // Header (32 bytes), key count 0, anchored, token count and 3 tokens; then per label its
  // length (i64), page count (u32) and the page; then the names (u32 length, bytes) of the
  // labels.
  Bytes bytes = PublishThreeTokens(cfg);
  PluginInstance* target = MakeKv(cfg);
  FakeRequest r(5);
  for (int ask = 0; ask < 2; ++ask) {
    mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
    ASSERT_TRUE(TakeStatus(T(target)->check_ready(target->self(), &r.info, bytes.data(),
                                                  bytes.size(), &admit))
                    .ok());
    EXPECT_EQ(admit.outcome, MSTAR_ADMIT_READY);
    EXPECT_EQ(Stats(target).used_units, 2u) << "ask " << ask;
  }
  T(target)->remove_request(target->self(), r.info.request_id);
  EXPECT_EQ(Stats(target).used_units, 0u);

  const size_t labels_at = 32 + 4 + 4 + 4 + 3 * 4;
  const size_t names = 4 + 4 + 4 + 6;  // "cond", "uncond"
  const size_t block = (bytes.size() - labels_at - 24 - names) / 2;
  ASSERT_EQ(labels_at + 2 * (12 + block) + names, bytes.size());
  bytes.erase(bytes.begin() + labels_at + 12, bytes.begin() + labels_at + 12 + block);
  std::memset(bytes.data() + labels_at, 0, 12);
  FakeRequest other(6);
  mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
  Status refused = TakeStatus(
      T(target)->check_ready(target->self(), &other.info, bytes.data(), bytes.size(), &admit));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("gives label 'uncond' 3 tokens and label 'cond' 0 (labels "
                                   "advance together)"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(Stats(target).used_units, 0u);
}

// Labels are matched by name and order: state of ["cond", "uncond"] is refused by a cache of
// ["uncond", "cond"] (it would take one label's K/V for the other's) and of ["cond", "other"],
// with nothing taken.
TEST_F(Wire, StateOfOtherLabelsIsRefusedNamingBoth) {
  const Bytes published =
      PublishThreeTokens(std::string(kCfg) + "labels = [\"cond\", \"uncond\"]\n");
  for (const char* labels : {"[\"uncond\", \"cond\"]", "[\"cond\", \"other\"]"}) {
    PluginInstance* target = MakeKv(std::string(kCfg) + "labels = " + labels + "\n");
    FakeRequest r(5);
    mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
    Status s = TakeStatus(T(target)->check_ready(target->self(), &r.info, published.data(),
                                                 published.size(), &admit));
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << labels;
    EXPECT_NE(s.message().find("published state has labels ['cond', 'uncond'] but this cache has"),
              std::string::npos)
        << s.ToString();
    EXPECT_EQ(Stats(target).used_units, 0u);
  }
}

TEST_F(Wire, AHugeTokenCountIsRefusedBeforeAnythingIsAllocated) {
  // Header (8 x u32), key count (u32, no full page yet: 0), anchored (u32), then the token
  // count, which claims 4 G tokens that the bytes do not hold.
  Bytes bytes = PublishThreeTokens(kCfg);
  uint32_t keys = 0;
  std::memcpy(&keys, bytes.data() + 32, 4);
  ASSERT_EQ(keys, 0u);
  const uint32_t huge = 0xFFFFFFFFu;
  std::memcpy(bytes.data() + 40, &huge, 4);
  PluginInstance* target = MakeKv(kCfg);
  FakeRequest r(5);
  mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
  Status s = TakeStatus(
      T(target)->check_ready(target->self(), &r.info, bytes.data(), bytes.size(), &admit));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();
}

TEST_F(Wire, DamagedDeltasAreRefusedOrReplayedNeverCrash) {
  mstar_tier_handle_t* tier = MakeTier();
  Bytes delta = WorkloadDelta(MakeKv(kCfg, {tier}));
  ASSERT_GT(delta.size(), 200u);
  {  // the undamaged delta replays
    PluginInstance* follower = MakeKv(kCfg, {MakeTier()});
    ASSERT_TRUE(ApplyDelta(follower, delta).ok());
  }
  size_t refused = 0;
  for (const Bytes& mutant : Mutants(delta, 11, 1500)) {
    PluginInstance* follower = MakeKv(kCfg, {tier});
    Status s = ApplyDelta(follower, mutant);
    if (s.ok()) continue;
    ++refused;
    EXPECT_TRUE(s.code() == Code::kFailedPrecondition || s.code() == Code::kInvalidArgument)
        << s.ToString();
  }
  EXPECT_GT(refused, 0u);
}

// A delta cut short is refused wherever the cut falls: inside a move's payload, or inside the
// header of the move after the last whole one (fewer bytes than a header are left).
TEST_F(Wire, ADeltaCutShortIsRefusedWhereverTheCutFalls) {
  const Bytes delta = WorkloadDelta(MakeKv(kCfg, {MakeTier()}));
  const std::optional<size_t> last = FindRecord(delta, kSetLen);
  ASSERT_TRUE(last.has_value());
  for (size_t cut : {delta.size() - 5, *last + 3, *last + kRecordHeader + 2}) {
    PluginInstance* follower = MakeKv(kCfg, {MakeTier()});
    Status s = ApplyDelta(follower, Bytes(delta.begin(), delta.begin() + cut));
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << "cut at " << cut << ": " << s.ToString();
    EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
  }
}

// Every move of a workload moved to label 3 of a one-label cache: consistent, so every move
// would apply, but the cache has no such label (its tiers' blocks and error messages are kept
// per label), so the first move is refused and nothing is applied.
TEST_F(Wire, ADeltaNamingALabelTheCacheLacksIsRefused) {
  Bytes delta = WorkloadDelta(MakeKv(kCfg, {MakeTier()}));
  constexpr size_t kLabelAt = 1 + 8 + 8;
  const uint32_t label = 3;
  for (size_t at : Records(delta)) {
    if (delta[at] != kDigest) std::memcpy(delta.data() + at + kLabelAt, &label, 4);
  }
  PluginInstance* follower = MakeKv(kCfg, {MakeTier()});
  Status s = ApplyDelta(follower, delta);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("move #0 names label 3 of a cache with 1"), std::string::npos)
      << s.message();
  EXPECT_EQ(Stats(follower).used_units, 0u);
}

TEST_F(Wire, AReloadThatNamesOnePageTwiceIsRefused) {
  PluginInstance* leader = MakeKv(kCfg, {MakeTier()});
  FakeRequest a(1);
  ASSERT_TRUE(Add(leader, a).ok());
  Step(leader, {&a}, {8});  // two pages
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->offload(leader->self(), 1, 0, nullptr, &reclaimed)).ok());
  uint32_t done = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->reload(leader->self(), 1, nullptr, &done)).ok());
  Bytes delta = TakeDelta(leader);
  // The reload record (see kv_delta.cc: kind, move number, request, label, then the page count
  // and the pages); its second page is made to repeat the first.
  std::optional<size_t> reload = FindRecord(delta, kReload);
  ASSERT_TRUE(reload.has_value());
  uint32_t count = 0;
  std::memcpy(&count, delta.data() + *reload + kRecordHeader, 4);
  ASSERT_EQ(count, 2u);
  std::memcpy(delta.data() + *reload + kRecordHeader + 8,
              delta.data() + *reload + kRecordHeader + 4, 4);
  PluginInstance* follower = MakeKv(kCfg, {MakeTier()});
  Status s = ApplyDelta(follower, delta);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("twice"), std::string::npos) << s.message();
}

// A published state of request A (9 tokens: two keyed pages and one token after them), with
// the offsets of its key count, keys and first label's length (see kv_paged_publish.cc).
struct Published {
  Bytes bytes;
  static constexpr size_t kKeys = 32;  // u32 count, then the keys, 32 bytes each
  static constexpr size_t kFirstKey = kKeys + 4;
  size_t len_at = 0;  // i64: the first label's length
};

class WirePublished : public Wire {
 protected:
  Published PublishA() {
    PluginInstance* source = MakeKv(kCfg);
    FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
    EXPECT_TRUE(Add(source, a).ok());
    Step(source, {&a}, {9});
    mstar_bytes_t published;
    EXPECT_TRUE(TakeStatus(T(source)->publish(source->self(), 1, &published)).ok());
    Published out{published.data};
    uint32_t keys = 0, tokens = 0;
    std::memcpy(&keys, out.bytes.data() + Published::kKeys, 4);
    EXPECT_EQ(keys, 2u);
    const size_t anchored_at = Published::kFirstKey + 32 * keys;
    std::memcpy(&tokens, out.bytes.data() + anchored_at + 4, 4);
    EXPECT_EQ(tokens, 1u);
    out.len_at = anchored_at + 8 + 4 * tokens;
    int64_t len = 0;
    std::memcpy(&len, out.bytes.data() + out.len_at, 8);
    EXPECT_EQ(len, 9);
    return out;
  }
  Status CheckReady(const Bytes& bytes) {
    PluginInstance* target = MakeKv(kCfg);
    FakeRequest r(5);
    mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
    Status s = TakeStatus(
        T(target)->check_ready(target->self(), &r.info, bytes.data(), bytes.size(), &admit));
    if (s.ok()) {
      EXPECT_EQ(admit.outcome, MSTAR_ADMIT_READY);
    } else {
      EXPECT_EQ(Stats(target).used_units, 0u) << "nothing was taken in";
    }
    return s;
  }
};

TEST_F(WirePublished, TheUntouchedStateIsTakenIn) {
  EXPECT_TRUE(CheckReady(PublishA().bytes).ok());
}

// Two pages under one key: a reload could take one page back for the other.
TEST_F(WirePublished, AChainThatRepeatsAKeyIsRefused) {
  Published p = PublishA();
  std::memcpy(p.bytes.data() + Published::kFirstKey + 32, p.bytes.data() + Published::kFirstKey,
              32);
  Status s = CheckReady(p.bytes);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("repeats a key"), std::string::npos) << s.message();
}

// Two keys for a sequence of 7 tokens, whose second page is not full: it would be keyed while
// the request still writes into it.
TEST_F(WirePublished, KeysPastTheFullPagesAreRefused) {
  Published p = PublishA();
  const int64_t len = 7;
  std::memcpy(p.bytes.data() + p.len_at, &len, 8);
  Status s = CheckReady(p.bytes);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("keys 2 pages of label"), std::string::npos) << s.message();
}

// Three pages for 8 tokens, which fill two of 4: publish writes only the pages a length needs,
// and a third would hold a pool page for nothing while the request lives.
TEST_F(WirePublished, PagesPastWhatTheLengthNeedsAreRefused) {
  Published p = PublishA();
  const int64_t len = 8;
  std::memcpy(p.bytes.data() + p.len_at, &len, 8);
  Status s = CheckReady(p.bytes);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("lists an impossible sequence (label 'main': 8 tokens in 3 pages of "
                             "4)"),
            std::string::npos)
      << s.message();
  // A length at the top of int64 is refused too (its page count is computed without overflow).
  const int64_t huge = INT64_MAX;
  std::memcpy(p.bytes.data() + p.len_at, &huge, 8);
  Status too_long = CheckReady(p.bytes);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.message().find("lists an impossible sequence"), std::string::npos)
      << too_long.message();
}

// A reload move may take back a page only when it is free or cached unreferenced: here the
// follower is told to reload B's first page into the page A holds (under the same key).
TEST_F(Wire, AReloadIntoAPageHeldAlreadyIsRefused) {
  PluginInstance* leader = MakeKv(kCfg, {MakeTier()});
  FakeRequest a(1, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9}), b(2, Tokens{1, 2, 3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(Add(leader, a).ok());
  ASSERT_EQ(Step(leader, {&a}, {9}), (std::vector<uint32_t>{0}));
  const int32_t held = Probe(leader, a).pages.at(0);
  ASSERT_TRUE(Add(leader, b).ok());
  ASSERT_EQ(Step(leader, {&b}, {9}), (std::vector<uint32_t>{0}));
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->offload(leader->self(), 2, 0, nullptr, &reclaimed)).ok());
  uint32_t done = 0;
  ASSERT_TRUE(TakeStatus(T(leader)->reload(leader->self(), 2, nullptr, &done)).ok());
  ASSERT_EQ(done, 1u);
  Bytes delta = TakeDelta(leader);
  std::optional<size_t> reload = FindRecord(delta, kReload);
  ASSERT_TRUE(reload.has_value());
  std::memcpy(delta.data() + *reload + kRecordHeader + 4, &held, 4);
  PluginInstance* follower = MakeKv(kCfg, {MakeTier()});
  Status s = ApplyDelta(follower, delta);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("neither free nor cached"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mstar::kvtest
