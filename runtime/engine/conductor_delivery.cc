// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's client-side work: what was decided under its lock (outputs to encode and push,
// requests to end) is queued in order and carried out after the lock is released.
#include <cstring>

#include "core/logging.h"
#include "engine/conductor.h"
#include "engine/conductor_pending.h"
#include "plugin/columnar.h"

namespace mstar {

bool Conductor::Post(Pending& pending) {
  for (const Pending::Finish& f : pending.finishes) {
    requests_.erase(f.id);
    beneficiaries_.erase(f.id);  // its victims wait for it no longer (WaitsForBeneficiary)
    leaving_ids_.insert(f.id);   // until Carry has removed it from the engine
  }
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
    carrying_.swap(outbox_);
    lock.unlock();
    for (Pending& pending : carrying_) finished_any |= Carry(pending);
    for (Pending& pending : carrying_) {  // releases tensors outside the lock
      pending.rows.clear();
      pending.emits.clear();
    }
    lock.lock();
    // The emptied lists go back for later steps (a batch's list is large: no heap churn).
    for (Pending& pending : carrying_) {
      if (spare_emits_.size() < kSpareLists && pending.emits.capacity() != 0)
        spare_emits_.push_back(std::move(pending.emits));
      if (spare_rows_.size() < kSpareLists && pending.rows.capacity() != 0)
        spare_rows_.push_back(std::move(pending.rows));
    }
    carrying_.clear();
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
  CarryRows(pending);
  CarryEmits(pending);
  if (pending.finishes.empty()) return false;
  for (Pending::Finish& finish : pending.finishes) SettleEnd(finish);
  for (const Pending::Finish& finish : pending.finishes) engine_.RemoveRequest(finish.id);
  {
    // Removed: the ids may be submitted again, before the streams finish (a client that waits
    // for its stream's end and then submits the id again must not be refused). Those to be
    // recomputed stay reserved for their new attempt.
    std::lock_guard<std::mutex> lock(mu_);
    for (const Pending::Finish& finish : pending.finishes) {
      leaving_ids_.erase(finish.id);
      if (finish.again != nullptr) reserved_ids_.insert(finish.id);
    }
  }
  for (Pending::Finish& finish : pending.finishes) {
    if (finish.again != nullptr) {
      StartAgain(finish);
    } else {
      finish.stream->Finish(finish.result);
    }
  }
  return true;
}

void Conductor::CarryRows(Pending& pending) {
  OutputChunk& chunk = carry_chunk_;
  const EdgeSpec*& named = carry_named_;
  for (const Pending::Rows& list : pending.rows) {
    const RowEncoder encoder(*list.tensor, list.spec->modality == "text");
    for (const Pending::Rows::Row& row : list.rows) {
      if (named != list.spec) {
        chunk.name = list.spec->name;
        chunk.modality = list.spec->modality;
        named = list.spec;
      }
      chunk.bytes.clear();
      chunk.values.clear();
      encoder.Encode(row.begin, row.count, &chunk);
      // A callback leaves the chunk as it was (its names need no copy again); a queue takes it.
      if (!row.stream->has_chunk_callback()) named = nullptr;
      if (!row.stream->Push(std::move(chunk))) FailPushed(row.request, *row.stream);
    }
  }
}

void Conductor::CarryEmits(Pending& pending) {
  PluginInstance* controller = engine_.runtime().controller();
  for (Pending::Emit& emit : pending.emits) {
    if (emit.tensor == nullptr) {
      if (!emit.stream->Push(std::move(emit.chunk))) FailPushed(emit.request, *emit.stream);
      continue;
    }
    const RequestId id = emit.info.request_id;
    if (output_failures_.count(id) != 0) continue;  // its output is incomplete already
    Status error;
    EncodeOutput(controller, &engine_.runtime().controller_mutex(), emit.Info(), *emit.name,
                 *emit.modality, *emit.tensor, &emit.chunk, &error);
    if (!error.ok()) {
      FailOutput(id, "the model controller's encode_output failed on output '" + *emit.name +
                         "': " + error.message());
      continue;
    }
    if (!emit.stream->Push(std::move(emit.chunk))) FailPushed(id, *emit.stream);
  }
}

void Conductor::SettleEnd(Pending::Finish& finish) {
  auto failed = [&](std::string error) {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish.again != nullptr) {  // what it sent is incomplete: not to be recomputed
      finish.again.reset();
      recomputing_.erase(finish.id);
    } else {
      --stats_.requests_done;
    }
    ++stats_.requests_failed;
    finish.result.end = RequestEnd::kFailed;
    finish.result.error = std::move(error);
  };
  if (auto failure = output_failures_.find(finish.id); failure != output_failures_.end()) {
    if (finish.result.end == RequestEnd::kDone || finish.again != nullptr)
      failed(std::move(failure->second));
    output_failures_.erase(failure);
  }
  if (finish.result.end != RequestEnd::kDone) return;
  if (std::string unrepeated = finish.stream->Unrepeated(); !unrepeated.empty()) {
    failed("recomputed after its offloaded state was lost, it ended early: its " + unrepeated);
    Log().warn("request {}: {}", finish.id, finish.result.error);
  }
}

void Conductor::FailPushed(RequestId id, const RequestStream& stream) {
  FailOutput(id, stream.PushFailure());
}

void Conductor::FailOutput(RequestId id, std::string error) {
  if (output_failures_.count(id) != 0) return;  // failed already: the first reason stands
  Log().warn("request {}: {}", id, error);
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Request* r = Find(id)) Fail(*r, error, pending);
    // This thread is delivering: what Fail decided is carried out before Deliver returns.
    Post(pending);
  }
  output_failures_.emplace(id, std::move(error));
}

namespace {

// Element i of integer data of dtype, widened.
int64_t LoadInteger(DLDataType dtype, const uint8_t* data, int64_t i) {
  switch (dtype.bits) {
    case 64: return reinterpret_cast<const int64_t*>(data)[i];
    case 32: return reinterpret_cast<const int32_t*>(data)[i];
    case 16: return reinterpret_cast<const int16_t*>(data)[i];
    case 8: return dtype.code == kDLUInt ? data[i] : static_cast<int8_t>(data[i]);
    default: return 0;
  }
}

// The text modality's byte for an integer: itself when it is one, else '?'.
uint8_t TextByte(int64_t v) {
  return static_cast<uint8_t>(v >= 0 && v < 256 ? v : '?');
}

void AppendValues(DLDataType dtype, const uint8_t* data, int64_t count, ChunkValues* values) {
  if (dtype.code != kDLInt && dtype.code != kDLUInt) return;
  if (count > 1) values->reserve(values->size() + static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values->push_back(LoadInteger(dtype, data, i));
}

// The default encoding of count elements of dtype at data, appended to *chunk's payloads: the
// values of integer elements, and as bytes one per integer for text, else the raw bytes.
void EncodeDefault(DLDataType dtype, const uint8_t* data, int64_t count, bool text,
                   OutputChunk* chunk) {
  AppendValues(dtype, data, count, &chunk->values);
  if (text && !chunk->values.empty()) {
    if (chunk->values.size() > 1) chunk->bytes.reserve(chunk->values.size());
    for (int64_t v : chunk->values) chunk->bytes.push_back(TextByte(v));
    chunk->element_type = DLDataType{0, 0, 0};
  } else {
    chunk->bytes.assign(data, data + static_cast<uint64_t>(count) * ElementBytes(dtype));
    chunk->element_type = dtype;
  }
}

}  // namespace

void EncodeOutput(PluginInstance* controller, std::mutex* controller_mutex,
                  const mstar_request_info_t& info, const std::string& name,
                  const std::string& modality, const mstar_tensor_t& tensor, OutputChunk* out,
                  Status* error) {
  OutputChunk& chunk = *out;
  chunk.name = name;
  chunk.modality = modality;
  const DLTensor& dl = tensor.dl;
  const int64_t count = TensorNumElements(dl);
  const uint8_t* data = TensorBytes(dl);
  if (controller == nullptr || controller->model()->encode_output == nullptr)
    return EncodeDefault(dl.dtype, data, count, modality == "text", &chunk);
  AppendValues(dl.dtype, data, count, &chunk.values);
  chunk.element_type = DLDataType{0, 0, 0};  // the controller's encoding
  mstar_bytes bytes;
  std::lock_guard<std::mutex> lock(*controller_mutex);
  *error = CallPlugin(*controller, "encode_output", [&] {
    return controller->model()->encode_output(controller->self(), &info, name.c_str(),
                                              modality.c_str(), &tensor, &bytes);
  });
  chunk.bytes.assign(bytes.data.begin(), bytes.data.end());
}

RowEncoder::RowEncoder(const mstar_tensor_t& t, bool text)
    : dtype_(t.dl.dtype), row_elements_(RowElements(t.dl)), text_(text) {
  if (TensorNumElements(t.dl) == 0) return;
  data_ = RowData(t.dl, 0);
  row_bytes_ = static_cast<uint64_t>(t.dl.strides[0]) * ElementBytes(dtype_);  // as RowData
  one_int64_ =
      dtype_.code == kDLInt && dtype_.bits == 64 && dtype_.lanes == 1 && row_elements_ == 1;
}

void RowEncoder::Encode(int64_t begin, int64_t count, OutputChunk* chunk) const {
  if (count == 1 && one_int64_) {  // the common case, without the general path's loops
    const uint8_t* row = data_ + static_cast<uint64_t>(begin) * row_bytes_;
    int64_t v;
    std::memcpy(&v, row, sizeof(v));
    chunk->values.push_back(v);
    if (text_) {
      chunk->bytes.push_back(TextByte(v));
      chunk->element_type = DLDataType{0, 0, 0};
    } else {
      chunk->bytes.assign(row, row + sizeof(v));  // as EncodeDefault: the raw bytes
      chunk->element_type = dtype_;
    }
    return;
  }
  if (data_ == nullptr || count == 0) return EncodeDefault(dtype_, nullptr, 0, text_, chunk);
  EncodeDefault(dtype_, data_ + static_cast<uint64_t>(begin) * row_bytes_, count * row_elements_,
                text_, chunk);
}

}  // namespace mstar
