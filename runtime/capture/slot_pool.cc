// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/slot_pool.h"

namespace mstar {

SlotPool::SlotPool(CaptureBackend* backend, CaptureEvent site, int32_t first_id, uint32_t num_slots)
    : backend_(backend), site_(std::move(site)), first_id_(first_id), slots_(num_slots) {
  for (uint32_t i = 0; i < num_slots; ++i) slots_[i].id = first_id + static_cast<int32_t>(i);
}

SlotPool::~SlotPool() {
  Drain();
  for (CaptureSlot& slot : slots_) {
    backend_->DestroyExec(slot.exec);
    backend_->DestroyGraph(slot.graph);
  }
}

void SlotPool::Free(CaptureSlot& slot) {
  const bool launched = slot.state == CaptureSlot::State::kInFlight;
  backend_->DestroyFence(slot.fence);
  slot.fence = nullptr;
  slot.state = CaptureSlot::State::kFree;
  slot.preplanned = false;
  CaptureEvent event = site_;
  event.kind = CaptureEventKind::kRelease;
  event.slot = slot.id;
  event.reason = launched ? "fenced" : "unused";
  backend_->Record(std::move(event));
}

std::optional<int32_t> SlotPool::Lease(uint32_t rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (CaptureSlot& slot : slots_) {
    if (slot.state == CaptureSlot::State::kInFlight && backend_->FenceDone(slot.fence)) Free(slot);
  }
  for (size_t k = 0; k < slots_.size(); ++k) {
    CaptureSlot& slot = slots_[(next_ + k) % slots_.size()];
    if (slot.state != CaptureSlot::State::kFree) continue;
    // The event first: recording may throw (out of memory) with the slot still free.
    CaptureEvent event = site_;
    event.kind = CaptureEventKind::kLease;
    event.slot = slot.id;
    event.rows = rows;
    event.padding = site_.bucket.batch_size > rows ? site_.bucket.batch_size - rows : 0;
    backend_->Record(std::move(event));
    next_ = (next_ + k + 1) % slots_.size();
    slot.state = CaptureSlot::State::kLeased;
    return slot.id;
  }
  return std::nullopt;
}

bool SlotPool::CanLease() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const CaptureSlot& slot : slots_) {
    if (slot.state == CaptureSlot::State::kFree) return true;
    if (slot.state == CaptureSlot::State::kInFlight && backend_->FenceDone(slot.fence)) return true;
  }
  return false;
}

void SlotPool::Launched(int32_t id, FenceHandle fence) {
  std::lock_guard<std::mutex> lock(mutex_);
  CaptureSlot& s = slot(id);
  s.fence = fence;
  s.state = CaptureSlot::State::kInFlight;
  if (backend_->FenceDone(fence)) Free(s);
}

void SlotPool::Release(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  CaptureSlot& s = slot(id);
  if (s.state == CaptureSlot::State::kLeased) Free(s);
}

void SlotPool::Drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (CaptureSlot& slot : slots_) {
    if (slot.state != CaptureSlot::State::kInFlight) continue;
    backend_->WaitFence(slot.fence);
    Free(slot);
  }
}

CaptureSlot::State SlotPool::state(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_[static_cast<size_t>(id - first_id_)].state;
}

}  // namespace mstar
