// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/output_stream.h"

#include "core/exception_text.h"
#include "core/logging.h"

namespace mstar {

bool RequestStream::Push(OutputChunk&& chunk) {
  if (writer_finished_ || stopped()) return !stopped();  // nothing after the end
  if (replay_ != nullptr) {
    switch (replay_->Take(chunk)) {
      case ChunkReplay::Verdict::kNew: break;
      case ChunkReplay::Verdict::kRepeated: return true;
      case ChunkReplay::Verdict::kDiverged: diverged_ = true; return false;
    }
  }
  chunk.sequence = next_sequence_++;
  // Callbacks are set before the request is added and never changed after (SetCallbacks'
  // contract), so they are read without the lock.
  if (on_chunk_) {
    try {
      on_chunk_(chunk);
    } catch (...) {
      callback_threw_ = true;
      try {
        callback_error_ = "the client's chunk callback threw: " + CurrentExceptionText();
      } catch (...) {  // out of memory for the message: PushFailure says less
      }
      return false;
    }
    return true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  chunks_.push_back(std::move(chunk));
  chunk_ready_.notify_one();
  return true;
}

void RequestStream::RememberChunks() {
  if (replay_ == nullptr) replay_ = std::make_unique<ChunkReplay>();
}

void RequestStream::Replay() {
  if (replay_ != nullptr) replay_->Rewind();
}

std::string RequestStream::PushFailure() const {
  if (callback_threw_)
    return callback_error_.empty() ? "the client's chunk callback threw" : callback_error_;
  if (diverged_ && replay_ != nullptr)
    return "recomputed after its offloaded state was lost, its " + replay_->divergence();
  return "";
}

void RequestStream::Finish(RequestResult result) {
  if (writer_finished_) return;
  writer_finished_ = true;
  // The end callback returns before any reader can see the end, so a client whose Wait has
  // returned may free what its callback refers to. Read without the lock, as in Push.
  if (on_end_) {
    try {
      on_end_(result);
    } catch (...) {  // the stream still ends: a reader in Wait must not wait forever
      Log().error("request {}: the client's end callback threw: {}", id_, CurrentExceptionText());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  result_ = std::move(result);
  chunk_ready_.notify_all();
  ended_.notify_all();
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
