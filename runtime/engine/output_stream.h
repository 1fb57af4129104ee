// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RequestStream: what a request sends its client, in order: output chunks as they are emitted,
// then exactly one end (done, failed with the error, or cancelled). The engine's finisher thread
// writes; any thread reads, by blocking on Next or by a callback set before the request starts.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "core/small_vector.h"
#include "core/status.h"
#include "engine/chunk_replay.h"

namespace mstar {

using RequestId = uint64_t;

// A chunk's payload buffers keep a few elements inline (boost::container::small_vector, with the
// std::vector interface), so that a decode step's chunk (a token and its text) costs no heap
// allocation; larger payloads go to the heap as a vector's would.
using ChunkBytes = boost::container::small_vector<uint8_t, 16>;
using ChunkValues = boost::container::small_vector<int64_t, 2>;

struct OutputChunk {
  std::string name;      // the emit edge's name ("text", "audio", ...)
  std::string modality;  // "text", "tokens", "audio", "raw", ...
  ChunkBytes bytes;      // the payload for the client (encoded by the model's controller, or by the
                         // default encoding of the modality)
  ChunkValues values;    // the tensor's elements when it holds integers
  // What bytes hold: the tensor's elements of this type (the default encoding, but for text's
  // one byte per integer), or bits == 0 when they are text bytes or the controller's encoding.
  DLDataType element_type{0, 0, 0};
  uint64_t sequence = 0;  // position among this request's chunks
};

enum class RequestEnd { kDone, kFailed, kCancelled };

struct RequestResult {
  RequestEnd end = RequestEnd::kDone;
  std::string error;          // kFailed: why; the failing stage and plugin are named
  uint64_t tokens = 0;        // counted output tokens
  uint64_t steps = 0;         // node steps the request took part in
  uint64_t wasted_steps = 0;  // speculative steps whose outputs were dropped
  uint32_t recomputes = 0;    // times it started again from its prompt (its state was lost)
};

class RequestStream {
 public:
  explicit RequestStream(RequestId id) : id_(id) {}

  RequestId id() const { return id_; }
  // A stream serves one request: the first Take (the conductor's, when the stream is submitted)
  // returns true, later ones false until Untake (its submission was refused after all).
  bool Take() { return !taken_.exchange(true, std::memory_order_acq_rel); }
  void Untake() { taken_.store(false, std::memory_order_release); }

  // Writer side (the engine): one writer at a time (the engine's delivery; calls from different
  // threads must be ordered by the caller's own synchronization). Push takes the chunk (moved
  // into the queue, or handed to the callback and then left as it is); with a callback it takes
  // no lock. Nothing is pushed after Finish.
  //
  // Push returns false when the chunk callback threw, or when the request is being recomputed
  // and the chunk differs from the one sent before in its place: nothing more is pushed, and the
  // writer ends the request failed with PushFailure(). An end callback that throws is logged;
  // the stream ends all the same.
  bool Push(OutputChunk&& chunk);
  void Finish(RequestResult result);
  // Recomputation (chunk_replay.h), writer side. RememberChunks, before the first Push: what is
  // pushed is remembered, so that the request may be recomputed. Replay: the request starts again
  // from its prompt; the chunks it sent are expected again and held back, not sent twice.
  void RememberChunks();
  void Replay();
  // Why Push refused a chunk (empty while it has not).
  std::string PushFailure() const;
  // Whether a replayed stream ended short of what was sent: ChunkReplay::Unrepeated.
  std::string Unrepeated() const { return replay_ != nullptr ? replay_->Unrepeated() : ""; }

  // Reader side. Next blocks until a chunk arrives (true) or the stream ends (false).
  bool Next(OutputChunk* chunk);
  // Blocks until the end and returns it.
  RequestResult Wait();
  // The end, if it has come.
  std::optional<RequestResult> result() const;
  // Called (on the engine's thread, so keep it short) for each chunk and at the end, instead of
  // queueing. A chunk callback that throws fails the request (Push); an end callback that
  // throws is logged. Set them before the request is added and not again: pushes read them unlocked.
  // The end callback has returned before Next, Wait or result() can see the end.
  void SetCallbacks(std::function<void(const OutputChunk&)> on_chunk,
                    std::function<void(const RequestResult&)> on_end);
  // Whether chunks go to a callback (which leaves a pushed chunk as it was) rather than a queue.
  bool has_chunk_callback() const { return static_cast<bool>(on_chunk_); }

 private:
  RequestId id_;
  std::atomic<bool> taken_{false};
  mutable std::mutex mutex_;
  // Readers of chunks (Next) wait on chunk_ready_, readers of the end (Wait) on ended_, so a
  // client blocked in Wait is not woken for every chunk.
  std::condition_variable chunk_ready_;
  std::condition_variable ended_;
  std::deque<OutputChunk> chunks_;
  std::optional<RequestResult> result_;
  // The writer's own state (see Push), read and written without the lock.
  bool writer_finished_ = false;
  bool diverged_ = false;
  bool callback_threw_ = false;
  std::string callback_error_;  // what it threw (empty when even that could not be kept)
  bool stopped() const { return diverged_ || callback_threw_; }
  uint64_t next_sequence_ = 0;
  std::unique_ptr<ChunkReplay> replay_;  // null unless RememberChunks was called
  std::function<void(const OutputChunk&)> on_chunk_;
  std::function<void(const RequestResult&)> on_end_;
};

}  // namespace mstar
