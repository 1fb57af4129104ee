// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Scheduler: order within a queue, choice among queues, per-queue caps, stale entries and the
// queue keys (node, walk, capture key).
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <set>

namespace mstar {
namespace {

const QueueKey kA{1, 0, 0};
const QueueKey kB{2, 0, 0};
const QueueKey kC{3, 0, 0};

// An entry for request id with a priority and an arrival order.
ReadyEntry Entry(RequestId id, int32_t priority, uint64_t order) {
  ReadyEntry e;
  e.request = id;
  e.priority = priority;
  e.order = order;
  return e;
}

auto Cap(uint32_t n) {
  return [n](const QueueKey&) { return n; };
}
bool AllValid(const QueueKey&, const ReadyEntry&) {
  return true;
}

std::vector<RequestId> Ids(const std::vector<ReadyEntry>& batch) {
  std::vector<RequestId> ids;
  for (const ReadyEntry& e : batch) ids.push_back(e.request);
  return ids;
}
using R = std::vector<RequestId>;

bool SameKey(const QueueKey& a, const QueueKey& b) {
  return !(a < b) && !(b < a);
}

TEST(Scheduler, WithinAQueueHigherPriorityThenArrival) {
  Scheduler s;
  s.Push(kA, Entry(1, 0, 1));
  s.Push(kA, Entry(2, 5, 2));
  s.Push(kA, Entry(3, 0, 3));
  s.Push(kA, Entry(4, 5, 4));
  s.Push(kA, Entry(5, -1, 5));
  s.Push(kA, Entry(6, 5, 0));  // pushed last, arrived first
  QueueKey key;
  std::vector<ReadyEntry> batch = s.PopBatch(Cap(10), &key, AllValid);
  EXPECT_TRUE(SameKey(key, kA));
  EXPECT_EQ(Ids(batch), (R{6, 2, 4, 1, 3, 5}));
  EXPECT_TRUE(s.empty());
}

TEST(Scheduler, CapLimitsEachBatch) {
  Scheduler s;
  for (RequestId id = 1; id <= 5; ++id) s.Push(kA, Entry(id, 0, id));
  QueueKey key;
  EXPECT_EQ(Ids(s.PopBatch(Cap(2), &key, AllValid)), (R{1, 2}));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(Ids(s.PopBatch(Cap(2), &key, AllValid)), (R{3, 4}));
  EXPECT_EQ(Ids(s.PopBatch(Cap(2), &key, AllValid)), R{5});
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(s.PopBatch(Cap(2), &key, AllValid).empty());

  // The cap is asked per queue.
  for (RequestId id = 1; id <= 4; ++id) {
    s.Push(kA, Entry(id, 1, id));
    s.Push(kB, Entry(10 + id, 0, id));
  }
  auto caps = [](const QueueKey& k) { return k.node == kA.node ? 3u : 1u; };
  EXPECT_EQ(Ids(s.PopBatch(caps, &key, AllValid)), (R{1, 2, 3}));
  EXPECT_TRUE(SameKey(key, kA));
  EXPECT_EQ(Ids(s.PopBatch(caps, &key, AllValid)), R{4});
  EXPECT_EQ(Ids(s.PopBatch(caps, &key, AllValid)), R{11});
  EXPECT_TRUE(SameKey(key, kB));
  EXPECT_EQ(s.size(), 3u);
}

TEST(Scheduler, ServesTheHighestPriorityHeadThenTheOldest) {
  Scheduler s;
  s.Push(kC, Entry(30, 0, 2));
  s.Push(kA, Entry(10, 0, 1));
  s.Push(kA, Entry(11, 0, 10));
  s.Push(kB, Entry(20, 1, 5));
  QueueKey key;
  // B's head has the highest priority although it arrived after A's and C's.
  EXPECT_EQ(Ids(s.PopBatch(Cap(1), &key, AllValid)), R{20});
  EXPECT_TRUE(SameKey(key, kB));
  // Equal priorities: the oldest head, re-evaluated after every batch.
  EXPECT_EQ(Ids(s.PopBatch(Cap(1), &key, AllValid)), R{10});
  EXPECT_TRUE(SameKey(key, kA));
  EXPECT_EQ(Ids(s.PopBatch(Cap(1), &key, AllValid)), R{30});
  EXPECT_TRUE(SameKey(key, kC));
  // A newly pushed high-priority entry moves its queue to the front.
  s.Push(kB, Entry(21, 0, 20));
  s.Push(kB, Entry(22, 7, 21));
  EXPECT_EQ(Ids(s.PopBatch(Cap(1), &key, AllValid)), R{22});
  EXPECT_EQ(Ids(s.PopBatch(Cap(1), &key, AllValid)), R{11});
  EXPECT_EQ(Ids(s.PopBatch(Cap(1), &key, AllValid)), R{21});
  EXPECT_TRUE(s.empty());
}

TEST(Scheduler, StaleEntriesAreDropped) {
  Scheduler s;
  std::set<RequestId> stale = {1, 3};
  auto valid = [&](const QueueKey&, const ReadyEntry& e) { return stale.count(e.request) == 0; };
  for (RequestId id = 1; id <= 5; ++id) s.Push(kA, Entry(id, 0, id));
  QueueKey key;
  // Stale entries do not count toward the cap.
  EXPECT_EQ(Ids(s.PopBatch(Cap(2), &key, valid)), (R{2, 4}));
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(Ids(s.PopBatch(Cap(2), &key, valid)), R{5});
  EXPECT_TRUE(s.empty());

  // A queue emptied by stale entries gives way to the next one in the same call.
  stale = {100, 101, 102};
  s.Push(kA, Entry(100, 9, 1));
  s.Push(kA, Entry(101, 9, 2));
  s.Push(kB, Entry(102, 5, 3));
  s.Push(kC, Entry(200, 0, 4));
  s.Push(kC, Entry(201, 0, 5));
  std::vector<ReadyEntry> batch = s.PopBatch(Cap(8), &key, valid);
  EXPECT_EQ(Ids(batch), (R{200, 201}));
  EXPECT_TRUE(SameKey(key, kC));
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);

  // Nothing valid at all: an empty batch, and the stale entries are gone.
  s.Push(kA, Entry(100, 0, 1));
  s.Push(kB, Entry(101, 0, 2));
  EXPECT_TRUE(s.PopBatch(Cap(8), &key, valid).empty());
  EXPECT_TRUE(s.empty());
}

TEST(Scheduler, KeysSeparateQueues) {
  Scheduler s;
  const QueueKey plain{1, 0, 0}, captured{1, 0, 7}, other_walk{1, 1, 0};
  s.Push(plain, Entry(1, 0, 1));
  s.Push(captured, Entry(2, 0, 2));
  s.Push(plain, Entry(3, 0, 3));
  s.Push(other_walk, Entry(4, 0, 4));
  s.Push(captured, Entry(5, 0, 5));
  EXPECT_EQ(s.size(), 5u);
  QueueKey key;
  std::vector<ReadyEntry> batch = s.PopBatch(Cap(8), &key, AllValid);
  EXPECT_TRUE(SameKey(key, plain));
  EXPECT_EQ(Ids(batch), (R{1, 3}));  // never mixed with capture key 7 or walk 1
  batch = s.PopBatch(Cap(8), &key, AllValid);
  EXPECT_TRUE(SameKey(key, captured));
  EXPECT_EQ(key.capture_key, 7u);
  EXPECT_EQ(Ids(batch), (R{2, 5}));
  batch = s.PopBatch(Cap(8), &key, AllValid);
  EXPECT_TRUE(SameKey(key, other_walk));
  EXPECT_EQ(Ids(batch), R{4});
  EXPECT_TRUE(s.empty());
}

TEST(Scheduler, SizeAndEmptyTrackPushesAndPops) {
  Scheduler s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);
  QueueKey key;
  EXPECT_TRUE(s.PopBatch(Cap(4), &key, AllValid).empty());
  s.Push(kA, Entry(1, 0, 1));
  s.Push(kB, Entry(2, 0, 2));
  s.Push(kB, Entry(3, 0, 3));
  s.Push(kB, Entry(3, 0, 3));  // pushed twice: counted twice
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.PopBatch(Cap(1), &key, AllValid).size(), 1u);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.PopBatch(Cap(8), &key, AllValid).size(), 3u);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.empty());
}

// A busy queue (its batch is running) is hidden from empty() and PopBatch while size() still
// counts its entries, including those pushed while it is busy; once free again it is served,
// in its usual order. Busy and free twice in a row count once.
TEST(Scheduler, ABusyQueueIsHiddenUntilFreeAndKeepsWhatWasPushedMeanwhile) {
  Scheduler s;
  QueueKey key;
  s.Push(kA, Entry(1, 0, 1));
  s.SetBusy(kA, true);
  s.SetBusy(kA, true);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 1u);
  EXPECT_TRUE(s.PopBatch(Cap(4), &key, AllValid).empty());
  s.Push(kA, Entry(2, 5, 2));  // pushed while busy
  s.Push(kB, Entry(3, 0, 3));
  EXPECT_FALSE(s.empty());
  std::vector<ReadyEntry> batch = s.PopBatch(Cap(4), &key, AllValid);
  EXPECT_TRUE(SameKey(key, kB));
  EXPECT_EQ(Ids(batch), (R{3}));
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 2u);
  s.SetBusy(kA, false);
  s.SetBusy(kA, false);
  EXPECT_FALSE(s.empty());
  batch = s.PopBatch(Cap(4), &key, AllValid);
  EXPECT_TRUE(SameKey(key, kA));
  EXPECT_EQ(Ids(batch), (R{2, 1}));
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.size(), 0u);
  s.SetBusy(kC, true);  // a queue with no entries yet
  s.Push(kC, Entry(4, 0, 4));
  EXPECT_TRUE(s.empty());
  s.SetBusy(kC, false);
  EXPECT_EQ(Ids(s.PopBatch(Cap(4), &key, AllValid)), (R{4}));
}

}  // namespace
}  // namespace mstar
