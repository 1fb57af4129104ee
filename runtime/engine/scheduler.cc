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

Scheduler::Queue& Scheduler::QueueFor(const QueueKey& key) {
  // A batch's entries come back to one queue: the last one found is usually the one wanted.
  if (last_ != nullptr && !(last_->key < key) && !(key < last_->key)) return *last_;
  auto [it, added] = queues_.try_emplace(key);
  if (added) it->second.key = key;
  last_ = &it->second;
  return it->second;
}

void Scheduler::Push(const QueueKey& key, ReadyEntry entry) {
  Queue& queue = QueueFor(key);
  queue.Insert(entry);
  ++size_;
  Relist(queue);
}

bool Scheduler::Before(const Queue& a, const Queue& b) {
  if (ByPriority()(a.head(), b.head())) return true;
  if (ByPriority()(b.head(), a.head())) return false;
  return a.key < b.key;
}

void Scheduler::Relist(Queue& queue) {
  const bool ready = !queue.empty() && !queue.busy;
  if (ready == queue.listed) return;
  queue.listed = ready;
  if (ready) {
    ready_.push_back(&queue);
    return;
  }
  auto at = std::find(ready_.begin(), ready_.end(), &queue);
  *at = ready_.back();
  ready_.pop_back();
}

void Scheduler::SetBusy(const QueueKey& key, bool busy) {
  Queue& queue = QueueFor(key);
  queue.busy = busy;
  Relist(queue);
}

void Scheduler::PopBatch(const std::function<uint32_t(const QueueKey&)>& cap, QueueKey* key,
                         const std::function<bool(const QueueKey&, const ReadyEntry&)>& valid,
                         std::vector<ReadyEntry>* batch) {
  batch->clear();
  while (batch->empty() && !ready_.empty()) {
    Queue* best = ready_.front();
    for (Queue* queue : ready_) {
      if (Before(*queue, *best)) best = queue;
    }
    const uint32_t max = cap(best->key);
    MSTAR_CHECK(max > 0);  // a cap of 0 would pick this queue again forever
    batch->reserve(std::min<size_t>(max, best->size()));
    while (!best->empty() && batch->size() < max) {
      ReadyEntry entry = best->PopFront();
      --size_;
      if (valid(best->key, entry)) batch->push_back(entry);
    }
    Relist(*best);
    *key = best->key;
  }
}

std::vector<ReadyEntry> Scheduler::PopBatch(
    const std::function<uint32_t(const QueueKey&)>& cap, QueueKey* key,
    const std::function<bool(const QueueKey&, const ReadyEntry&)>& valid) {
  std::vector<ReadyEntry> batch;
  PopBatch(cap, key, valid, &batch);
  return batch;
}

}  // namespace mstar
