// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/output_stream.h"

namespace mstar {

void RequestStream::Push(OutputChunk&& chunk) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (result_) return;  // nothing after the end
    chunk.sequence = next_sequence_++;
    if (!on_chunk_) {
      chunks_.push_back(std::move(chunk));
      chunk_ready_.notify_one();
      return;
    }
  }
  // Set before the request was added and never changed after (SetCallbacks' contract), so read
  // without the lock; the engine pushes one request's chunks from one thread at a time.
  on_chunk_(chunk);
}

void RequestStream::Finish(RequestResult result) {
  std::function<void(const RequestResult&)> callback;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (result_) return;
    result_ = result;
    callback = on_end_;
    chunk_ready_.notify_all();
    ended_.notify_all();
  }
  if (callback) callback(result);
}

bool RequestStream::Next(OutputChunk* chunk) {
  std::unique_lock<std::mutex> lock(mutex_);
  chunk_ready_.wait(lock, [&] { return !chunks_.empty() || result_.has_value(); });
  if (chunks_.empty()) return false;
  *chunk = std::move(chunks_.front());
  chunks_.pop_front();
  return true;
}

RequestResult RequestStream::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  ended_.wait(lock, [&] { return result_.has_value(); });
  return *result_;
}

std::optional<RequestResult> RequestStream::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_;
}

void RequestStream::SetCallbacks(std::function<void(const OutputChunk&)> on_chunk,
                                 std::function<void(const RequestResult&)> on_end) {
  std::lock_guard<std::mutex> lock(mutex_);
  on_chunk_ = std::move(on_chunk);
  on_end_ = std::move(on_end);
}

}  // namespace mstar
