// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Scheduler: the ready queues. When a request's node has all its inputs, the conductor pushes an
// entry to the queue of (node, walk, capture key); a batch is taken from one queue, so a batch
// never mixes walks or capture groups, and continuous batching falls out: whichever requests are
// ready for the same (node, walk) run together. Within a queue, higher priority goes first, then
// arrival. Across queues, the queue whose head has the highest priority is served, then the one
// whose head's request arrived first. Nothing is scanned: a queue is a vector kept in order (entries
// mostly arrive in order, a batch's requests coming back together, so a push is a binary search
// and an append) read from a moving front, so pushing and popping allocate nothing in the steady
// state. The best queue is found by a look over the queues that have entries (keys are few:
// nodes x walks x capture keys), which costs less than keeping them ordered.
//
// A queue can be held busy (SetBusy) while a batch taken from it has not executed yet: its
// entries then wait, and join those the batch makes ready, so requests of one (node, walk) that
// fell out of step run together again instead of as separate, smaller batches.
//
// Entries can go stale (the request failed, its loop was stopped); the caller's validator drops
// them as they are popped. Not thread-safe: the conductor's lock guards it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "engine/output_stream.h"

namespace mstar {

struct QueueKey {
  int node = -1;
  int walk = -1;
  uint64_t capture_key = 0;
  bool operator<(const QueueKey& o) const {
    if (node != o.node) return node < o.node;
    if (walk != o.walk) return walk < o.walk;
    return capture_key < o.capture_key;
  }
};

struct ReadyEntry {
  RequestId request = 0;
  int partition = -1;
  uint64_t generation = 0;  // the partition's walk run
  int walk_node = -1;       // the node's index within the walk
  uint64_t activation = 0;  // the node's activation when it became ready
  int32_t priority = 0;
  uint64_t order = 0;  // the request's arrival order (ties: first come, first served)
};

class Scheduler {
 public:
  void Push(const QueueKey& key, ReadyEntry entry);
  // Whether no queue that is not busy has entries.
  bool empty() const { return ready_.empty(); }
  void SetBusy(const QueueKey& key, bool busy);
  size_t size() const { return size_; }
  // Pops up to cap(queue) valid entries (valid says which are still valid) from the best queue
  // into *batch (cleared first; its capacity is reused); *key receives that queue. Empty when
  // nothing valid remains. cap must be 1 or more (checked).
  void PopBatch(const std::function<uint32_t(const QueueKey&)>& cap, QueueKey* key,
                const std::function<bool(const QueueKey&, const ReadyEntry&)>& valid,
                std::vector<ReadyEntry>* batch);
  std::vector<ReadyEntry> PopBatch(
      const std::function<uint32_t(const QueueKey&)>& cap, QueueKey* key,
      const std::function<bool(const QueueKey&, const ReadyEntry&)>& valid);

 private:
  struct ByPriority {
    bool operator()(const ReadyEntry& a, const ReadyEntry& b) const {
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.order < b.order;
    }
  };
  // One ready queue: entries [front, end) in ByPriority order, equal entries first come first.
  struct Queue {
    QueueKey key;
    std::vector<ReadyEntry> entries;
    size_t front = 0;
    bool busy = false;
    bool listed = false;  // in ready_
    bool empty() const { return front == entries.size(); }
    size_t size() const { return entries.size() - front; }
    const ReadyEntry& head() const { return entries[front]; }
    void Insert(const ReadyEntry& entry);
    ReadyEntry PopFront();
  };
  // Whether a's head goes before b's: higher priority, then earlier arrival, then key order.
  static bool Before(const Queue& a, const Queue& b);
  // Lists queue in ready_ when it has entries and is not busy, unlists it otherwise.
  void Relist(Queue& queue);
  // The queue of key, made when new.
  Queue& QueueFor(const QueueKey& key);

  std::map<QueueKey, Queue> queues_;  // an emptied queue stays, with its buffer: keys are few
  std::vector<Queue*> ready_;         // the queues with entries that are not busy
  Queue* last_ = nullptr;             // the queue QueueFor found last (map nodes do not move)
  size_t size_ = 0;
};

}  // namespace mstar
