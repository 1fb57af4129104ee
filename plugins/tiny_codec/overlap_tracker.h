// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// OverlapTracker: which rows of each chunk a request's stream consumer has not decoded before.
//
// The engine's chunk policies (runtime/engine/stream_buffer.h) cut a stream into chunks whose
// first row is k * stride for the k-th chunk (sliding window: stride; fixed: the chunk size),
// except the final chunk, which starts at min(k * stride, rows covered so far). The consumer sees
// only the rows, so it counts chunks and covered rows itself: a chunk of n rows starting at b
// brings b + n - covered new rows, always its last ones. Emitting output for just those rows makes
// the concatenated output exactly one piece per streamed row, however the windows overlap.
//
// `stride` must equal the stream's stride (or fixed size); a chunk that ends before the rows
// already covered proves it does not, and Next throws INVALID_ARGUMENT saying so.
//
// Not thread-safe; the host never calls one instance from two threads at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "mstar/sdk/error.hpp"

namespace mstar::tiny_codec {

class OverlapTracker {
 public:
  explicit OverlapTracker(int64_t stride) : stride_(stride) {}

  struct Cut {
    int64_t begin = 0;  // the chunk's first row within the request's stream
    int64_t fresh = 0;  // rows at the chunk's end not covered by earlier chunks
  };

  // Where a chunk of `rows` rows for request `id` lies; changes nothing.
  Cut Next(uint64_t id, int64_t rows) const {
    auto it = state_.find(id);
    State s = it == state_.end() ? State{} : it->second;
    Cut cut;
    cut.begin = std::min(s.chunks * stride_, s.covered);
    if (cut.begin + rows < s.covered)
      throw sdk::InvalidArgument(
          "chunk " + std::to_string(s.chunks) + " of " + std::to_string(rows) +
          " rows ends before row " + std::to_string(s.covered) +
          ", which earlier chunks already covered: the node's config 'stride' (" +
          std::to_string(stride_) + ") must equal the stream's stride");
    cut.fresh = cut.begin + rows - s.covered;
    return cut;
  }

  // Records that the chunk Next described was decoded.
  void Commit(uint64_t id, const Cut& cut, int64_t rows) {
    State& s = state_[id];
    ++s.chunks;
    s.covered = std::max(s.covered, cut.begin + rows);
  }

  void Forget(uint64_t id) { state_.erase(id); }
  size_t size() const { return state_.size(); }

 private:
  struct State {
    int64_t chunks = 0;   // chunks decoded
    int64_t covered = 0;  // rows [0, covered) have been decoded
  };
  int64_t stride_;
  std::unordered_map<uint64_t, State> state_;
};

}  // namespace mstar::tiny_codec
