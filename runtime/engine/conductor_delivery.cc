// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's client-side work: what was decided under its lock (outputs to encode and push,
// requests to end) is queued in order and carried out after the lock is released.
#include "core/logging.h"
#include "engine/conductor.h"
#include "engine/conductor_pending.h"

namespace mstar {

bool Conductor::Post(Pending& pending) {
  for (const Pending::Finish& f : pending.finishes) requests_.erase(f.id);
  if (pending.empty()) return false;
  outbox_.push_back(std::move(pending));
  pending = Pending{};
  return true;
}

void Conductor::Deliver() {
  std::unique_lock<std::mutex> lock(mu_);
  if (delivering_) return;
  delivering_ = true;
  bool finished_any = false;
  while (!outbox_.empty()) {
    std::vector<Pending> work;
    work.swap(outbox_);
    lock.unlock();
    for (Pending& pending : work) finished_any |= Carry(pending);
    for (Pending& pending : work) pending.emits.clear();  // releases tensors outside the lock
    lock.lock();
    // The emptied emit lists go back for later steps (a batch's list is large: no heap churn).
    for (Pending& pending : work) {
      if (spare_emits_.size() >= kSpareEmitLists) break;
      if (pending.emits.capacity() != 0) spare_emits_.push_back(std::move(pending.emits));
    }
  }
  delivering_ = false;
  // Finished requests freed their resources. And with nothing in flight, the waiters must be
  // looked at again (CheckProgress stood aside while this delivery was pending).
  if (finished_any || (batches_in_flight_ == 0 && !capacity_waiters_.empty()))
    WakeCapacityWaiters();
  if (requests_.empty()) idle_cv_.notify_all();
  WakeScheduler(lock);
}

bool Conductor::Carry(Pending& pending) {
  PluginInstance* controller = engine_.runtime().controller();
  for (Pending::Emit& emit : pending.emits) {
    if (emit.tensor == nullptr) {
      emit.stream->Push(std::move(emit.chunk));
      continue;
    }
    Status error;
    EncodeOutput(controller, &engine_.runtime().controller_mutex(), emit.info, *emit.name,
                 *emit.modality, *emit.tensor, &emit.chunk, &error);
    if (!error.ok()) {
      Log().warn("request {}: encoding output '{}': {}", emit.info.request_id, *emit.name,
                 error.message());
      continue;
    }
    emit.stream->Push(std::move(emit.chunk));
  }
  for (Pending::Finish& finish : pending.finishes) {
    engine_.RemoveRequest(finish.id);
    finish.stream->Finish(finish.result);
  }
  return !pending.finishes.empty();
}

void EncodeOutput(PluginInstance* controller, std::mutex* controller_mutex,
                  const mstar_request_info_t& info, const std::string& name,
                  const std::string& modality, const mstar_tensor_t& tensor, OutputChunk* out,
                  Status* error) {
  OutputChunk& chunk = *out;
  chunk.name = name;
  chunk.modality = modality;
  const DLTensor& dl = tensor.dl;
  int64_t count = TensorNumElements(dl);
  const auto* data = TensorBytes(dl);
  if (dl.dtype.code == kDLInt || dl.dtype.code == kDLUInt) {
    chunk.values.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      int64_t v = 0;
      if (dl.dtype.bits == 64) v = reinterpret_cast<const int64_t*>(data)[i];
      if (dl.dtype.bits == 32) v = reinterpret_cast<const int32_t*>(data)[i];
      if (dl.dtype.bits == 16) v = reinterpret_cast<const int16_t*>(data)[i];
      if (dl.dtype.bits == 8) v = dl.dtype.code == kDLUInt ? data[i] : static_cast<int8_t>(data[i]);
      chunk.values.push_back(v);
    }
  }
  if (controller != nullptr && controller->model()->encode_output != nullptr) {
    mstar_bytes bytes;
    std::lock_guard<std::mutex> lock(*controller_mutex);
    *error = CallPlugin(*controller, "encode_output", [&] {
      return controller->model()->encode_output(controller->self(), &info, name.c_str(),
                                                modality.c_str(), &tensor, &bytes);
    });
    chunk.bytes.assign(bytes.data.begin(), bytes.data.end());
    return;
  }
  if (modality == "text" && !chunk.values.empty()) {
    chunk.bytes.reserve(chunk.values.size());
    for (int64_t v : chunk.values)
      chunk.bytes.push_back(static_cast<uint8_t>(v >= 0 && v < 256 ? v : '?'));
  } else {
    chunk.bytes.assign(data, data + TensorNumBytes(dl));
  }
}

}  // namespace mstar
