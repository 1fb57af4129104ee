// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/stream_buffer.h"

#include <algorithm>
#include <cstring>

#include "device/device.h"
#include "host/tensor_objects.h"

namespace mstar {

void StreamBuffer::Abandon() {
  abandoned_ = true;
  std::vector<uint8_t>().swap(data_);
  first_row_ = rows_;
}

Status StreamBuffer::Append(const mstar_tensor_t& tensor) {
  const DLTensor& dl = tensor.dl;
  if (!IsHostDevice(dl.device)) return InvalidArgument("streamed tensors must be in host memory");
  if (dl.ndim == 0) return InvalidArgument("streamed tensors need at least one dimension (rows)");
  std::vector<int64_t> trailing(dl.shape + 1, dl.shape + dl.ndim);
  if (!dtype_) {
    dtype_ = dl.dtype;
    trailing_ = trailing;
    int64_t per_row = 1;
    for (int64_t d : trailing_) per_row *= d;
    row_bytes_ = static_cast<uint64_t>(per_row) * ElementBytes(dl.dtype);
  } else if (dtype_->code != dl.dtype.code || dtype_->bits != dl.dtype.bits ||
             dtype_->lanes != dl.dtype.lanes || trailing_ != trailing) {
    return InvalidArgument("a streamed tensor's dtype or trailing shape differs from earlier rows");
  }
  // Copy row by row through the strides, so views and transposes stream correctly.
  int64_t rows = dl.shape[0];
  const auto* base = TensorBytes(dl);
  uint64_t element = ElementBytes(dl.dtype);
  bool contiguous = true;
  int64_t expected = 1;
  for (int32_t i = dl.ndim; i-- > 1;) {
    if (dl.shape[i] != 1 && dl.strides[i] != expected) contiguous = false;
    expected *= dl.shape[i];
  }
  if (!contiguous) return InvalidArgument("streamed tensors must be contiguous within a row");
  if (abandoned_) {
    rows_ += static_cast<uint64_t>(rows);
    return Status::Ok();
  }
  size_t old = data_.size();
  data_.resize(old + static_cast<size_t>(rows) * row_bytes_);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(data_.data() + old + static_cast<size_t>(r) * row_bytes_,
                base + r * dl.strides[0] * element, row_bytes_);
  }
  rows_ += static_cast<uint64_t>(rows);
  return Status::Ok();
}

uint64_t StreamBuffer::NextBegin() const {
  // Fixed chunks follow each other (the stride is the sliding window's only).
  uint64_t step = policy_.kind == ChunkPolicySpec::Kind::kFixed ? policy_.window : policy_.stride;
  return next_chunk_ * step;
}

std::optional<StreamBuffer::Range> StreamBuffer::NextRange() const {
  if (final_taken_ || abandoned_) return std::nullopt;
  uint64_t begin = NextBegin();
  uint64_t end = begin + policy_.window;
  // A full window that reaches the end of a closed stream leaves nothing after it, except for a
  // consumer that holds rows back over overlapping windows: its tail chunk follows either way, so
  // its chunks do not depend on whether the producer had ended when the window was taken (a
  // recomputed request must get the same chunks).
  const bool tail_follows = always_final_ &&
                            policy_.kind == ChunkPolicySpec::Kind::kSlidingWindow &&
                            policy_.stride < policy_.window;
  // Over windows that do not overlap, such a consumer's window that reaches the end of an open
  // stream waits for a later row or the close, so the last window is the final chunk either way.
  const bool held_back = always_final_ && !tail_follows && end == rows_ && !closed_;
  if (end <= rows_ && !held_back) {
    return Range{begin, end, closed_ && end == rows_ && !tail_follows};
  }
  if (!closed_) return std::nullopt;
  if (rows_ > covered_) return Range{std::min(begin, covered_), rows_, true};
  if (always_final_ && begin < rows_) return Range{begin, rows_, true};
  return std::nullopt;
}

Result<mstar_tensor_t*> StreamBuffer::TakeChunk(bool* is_final) {
  std::optional<Range> range = NextRange();
  if (!range) return FailedPrecondition("no chunk is ready");
  std::vector<int64_t> shape = {static_cast<int64_t>(range->end - range->begin)};
  shape.insert(shape.end(), trailing_.begin(), trailing_.end());
  Result<mstar_tensor_t*> chunk = AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, *dtype_, shape);
  if (!chunk.ok()) return chunk.status();
  uint64_t bytes = (range->end - range->begin) * row_bytes_;
  if (bytes > 0)
    std::memcpy(chunk.value()->dl.data, data_.data() + (range->begin - first_row_) * row_bytes_,
                bytes);
  ++next_chunk_;
  covered_ = std::max(covered_, range->end);
  if (range->final) final_taken_ = true;
  *is_final = range->final;
  DropTakenRows();
  return chunk;
}

void StreamBuffer::DropTakenRows() {
  // The final chunk starts at min(NextBegin, covered_), and NextBegin <= covered_ (stride <=
  // window): nothing before NextBegin is read again.
  const uint64_t keep_from = final_taken_ ? rows_ : std::min(NextBegin(), rows_);
  const uint64_t dead = keep_from - first_row_;
  if (dead == 0 || dead * 2 < rows_ - first_row_) return;  // amortized: moves each row once or so
  data_.erase(data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(dead * row_bytes_));
  first_row_ = keep_from;
}

}  // namespace mstar
