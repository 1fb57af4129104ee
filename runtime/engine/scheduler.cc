// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/scheduler.h"

#include <algorithm>

namespace mstar {

void Scheduler::Push(const QueueKey& key, ReadyEntry entry) {
  auto& queue = queues_[key];
  bool new_head = queue.empty() || ByPriority()(entry, *queue.begin());  // equals go after
  queue.insert(entry);
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
  if (queue == queues_.end() || queue->second.empty()) {
    if (queue != queues_.end()) queues_.erase(queue);
    return;
  }
  if (busy_.count(key) != 0) return;
  const ReadyEntry& first = *queue->second.begin();
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
    auto& queue = queues_[chosen];
    batch.reserve(std::min<size_t>(max, queue.size()));
    while (!queue.empty() && batch.size() < max) {
      ReadyEntry entry = *queue.begin();
      queue.erase(queue.begin());
      --size_;
      if (valid(chosen, entry)) batch.push_back(entry);
    }
    UpdateHead(chosen);
    *key = chosen;
  }
  return batch;
}

}  // namespace mstar
