// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/scheduler.h"

#include <algorithm>

namespace mstar {

void Scheduler::Queue::Insert(const ReadyEntry& entry) {
  // (An empty queue has front 0: PopFront resets it when it takes the last entry.)
  // After every equal entry (first come, first served); usually at the end.
  if (empty() || !ByPriority()(entry, entries.back())) {
    entries.push_back(entry);
    return;
  }
  auto at = std::upper_bound(entries.begin() + static_cast<std::ptrdiff_t>(front), entries.end(),
                             entry, ByPriority());
  entries.insert(at, entry);
}

ReadyEntry Scheduler::Queue::PopFront() {
  ReadyEntry entry = entries[front++];
  if (front == entries.size()) {
    entries.clear();
    front = 0;
  } else if (front >= 64 && front * 2 >= entries.size()) {
    // Reclaim the popped prefix once it is at least half the buffer.
    entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(front));
    front = 0;
  }
  return entry;
}

void Scheduler::Push(const QueueKey& key, ReadyEntry entry) {
  Queue& queue = queues_[key];
  bool new_head = queue.empty() || ByPriority()(entry, queue.head());  // equals go after
  queue.Insert(entry);
  ++size_;
  if (new_head) UpdateHead(key);
}

void Scheduler::UpdateHead(const QueueKey& key) {
  auto old = head_of_.find(key);
  if (old != head_of_.end()) {
    heads_.erase(old->second);
    head_of_.erase(old);
  }
  auto queue = queues_.find(key);
  // An emptied queue stays (with its buffer) for the entries its key gets next: keys are few
  // (nodes x walks x capture keys).
  if (queue == queues_.end() || queue->second.empty()) return;
  if (busy_.count(key) != 0) return;
  const ReadyEntry& first = queue->second.head();
  Head head{first.priority, first.order, key};
  heads_.insert(head);
  head_of_[key] = head;
}

void Scheduler::SetBusy(const QueueKey& key, bool busy) {
  if (busy) {
    busy_.insert(key);
  } else {
    busy_.erase(key);
  }
  UpdateHead(key);
}

std::vector<ReadyEntry> Scheduler::PopBatch(
    const std::function<uint32_t(const QueueKey&)>& cap, QueueKey* key,
    const std::function<bool(const QueueKey&, const ReadyEntry&)>& valid) {
  std::vector<ReadyEntry> batch;
  while (batch.empty() && !heads_.empty()) {
    QueueKey chosen = heads_.begin()->key;
    uint32_t max = cap(chosen);
    Queue& queue = queues_[chosen];
    batch.reserve(std::min<size_t>(max, queue.size()));
    while (!queue.empty() && batch.size() < max) {
      ReadyEntry entry = queue.PopFront();
      --size_;
      if (valid(chosen, entry)) batch.push_back(entry);
    }
    UpdateHead(chosen);
    *key = chosen;
  }
  return batch;
}

}  // namespace mstar
