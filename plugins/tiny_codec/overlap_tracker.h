// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// OverlapTracker: which rows of each chunk a request's stream consumer emits output for.
//
// The engine's chunk policies (runtime/engine/stream_buffer.h) cut a stream into chunks whose
// first row is k * stride for the k-th chunk (sliding window: stride; fixed: the chunk size),
// except the final chunk, which starts at min(k * stride, rows covered so far). The consumer sees
// only the rows, so it counts chunks and covered rows itself: a chunk of n rows starting at b
// brings b + n - covered new rows, always its last ones.
//
// With `lookahead` L, a row is emitted only once a chunk holds the L rows after it (right
// context), or the chunk is the stream's final one: a chunk emits rows [emitted, b + n - L), and
// the final chunk everything from `emitted` to its end. With L = 0 that is exactly its new rows.
// Either way the concatenated output holds exactly one piece per streamed row, however the
// windows overlap. Holding rows back needs chunks that overlap by at least L rows (window - stride
// >= L): a chunk that starts after a held-back row is refused (Next).
//
// `stride` must equal the stream's stride (or fixed size). The consumer cannot see the stream's
// chunk policy, so it checks the chunks against each other: a chunk that ends before the rows
// already covered proves the stride wrong (Next), and so does one whose rows that the previous
// chunk also held (by `stride`) hold other tokens than it did (Check); both throw
// INVALID_ARGUMENT saying so. A wrong stride goes unseen only while the stream's tokens repeat
// with a period that divides the difference between the strides (or when chunks do not overlap
// and the wrong stride is the larger: then the cut is right anyway).
//
// Not thread-safe; the host never calls one instance from two threads at once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "mstar/sdk/error.hpp"

namespace mstar::tiny_codec {

class OverlapTracker {
 public:
  explicit OverlapTracker(int64_t stride, int64_t lookahead = 0)
      : stride_(stride), lookahead_(lookahead) {}

  struct Cut {
    int64_t begin = 0;  // the chunk's first row within the request's stream
    int64_t from = 0;   // the chunk's rows [from, to) are emitted (indices within the chunk)
    int64_t to = 0;
  };

  // Where a chunk of `rows` rows for request `id` lies and which of its rows to emit (`final`:
  // it is the stream's last chunk); changes nothing.
  Cut Next(uint64_t id, int64_t rows, bool final) const {
    auto it = state_.find(id);
    static const State kFresh;
    const State& s = it == state_.end() ? kFresh : it->second;
    Cut cut;
    cut.begin = std::min(s.chunks * stride_, s.covered);
    if (cut.begin + rows < s.covered)
      throw sdk::InvalidArgument(
          "chunk " + std::to_string(s.chunks) + " of " + std::to_string(rows) +
          " rows ends before row " + std::to_string(s.covered) +
          ", which earlier chunks already covered: the node's config 'stride' (" +
          std::to_string(stride_) + ") must equal the stream's stride");
    if (s.emitted < cut.begin)
      throw sdk::InvalidArgument(
          "chunk " + std::to_string(s.chunks) + " starts at stream row " +
          std::to_string(cut.begin) + ", after row " + std::to_string(s.emitted) +
          ", which was held back for right context: with 'lookahead' " +
          std::to_string(lookahead_) +
          " the stream's windows must overlap by at least that many rows (window - stride >= "
          "lookahead)");
    const int64_t end = final ? cut.begin + rows : cut.begin + rows - lookahead_;
    cut.from = s.emitted - cut.begin;
    cut.to = std::max(cut.from, end - cut.begin);
    return cut;
  }

  // Checks that the next chunk of request `id`, `rows` tokens at `tokens`, holds the previous
  // chunk's tokens in the rows both hold by `stride`; keeps the tokens for Commit. Throws
  // INVALID_ARGUMENT naming the stride and, when the chunks overlap at some other shift, the
  // stride that shift means.
  void Check(uint64_t id, const int64_t* tokens, int64_t rows) {
    State& s = state_[id];
    s.pending.assign(tokens, tokens + rows);
    if (s.chunks == 0) return;
    const int64_t begin = std::min(s.chunks * stride_, s.covered);
    const auto last = static_cast<int64_t>(s.last.size());
    const int64_t from = std::max(begin, s.last_begin);
    const int64_t to = std::min(begin + rows, s.last_begin + last);
    for (int64_t row = from; row < to; ++row) {
      if (tokens[row - begin] == s.last[static_cast<size_t>(row - s.last_begin)]) continue;
      std::string seen;
      if (int64_t shift = Shift(s.last, tokens, rows); shift > 0)
        seen = "; these chunks overlap as for a stride of " + std::to_string(shift);
      throw sdk::InvalidArgument("chunk " + std::to_string(s.chunks) + " holds token " +
                                 std::to_string(tokens[row - begin]) + " at stream row " +
                                 std::to_string(row) + ", where the previous chunk held " +
                                 std::to_string(s.last[static_cast<size_t>(row - s.last_begin)]) +
                                 ": the node's config 'stride' (" + std::to_string(stride_) +
                                 ") must equal the stream's stride (or fixed size)" + seen);
    }
  }

  // Records that the chunk Next described (and Check saw, if it did) was decoded.
  void Commit(uint64_t id, const Cut& cut, int64_t rows) {
    State& s = state_[id];
    ++s.chunks;
    s.covered = std::max(s.covered, cut.begin + rows);
    s.emitted = cut.begin + cut.to;
    s.last_begin = cut.begin;
    s.last.swap(s.pending);
    s.pending.clear();
  }

  // The tokens of the chunk Check last saw for request `id` (empty when none is pending).
  const std::vector<int64_t>& Pending(uint64_t id) const {
    static const std::vector<int64_t> kNone;
    auto it = state_.find(id);
    return it == state_.end() ? kNone : it->second.pending;
  }

  void Forget(uint64_t id) { state_.erase(id); }
  size_t size() const { return state_.size(); }

 private:
  struct State {
    int64_t chunks = 0;      // chunks decoded
    int64_t covered = 0;     // rows [0, covered) have been decoded
    int64_t emitted = 0;     // rows [0, emitted) have been emitted (covered less held back)
    int64_t last_begin = 0;  // the last chunk decoded: its first row and its tokens
    std::vector<int64_t> last;
    std::vector<int64_t> pending;  // the chunk Check saw, until Commit
  };

  // The smallest shift d > 0 at which the chunk's first rows equal the previous chunk's rows
  // from d on (a stride the stream may have), or 0 when there is none.
  static int64_t Shift(const std::vector<int64_t>& last, const int64_t* tokens, int64_t rows) {
    const auto n = static_cast<int64_t>(last.size());
    for (int64_t d = 1; d < n; ++d) {
      const int64_t overlap = std::min(n - d, rows);
      if (std::equal(tokens, tokens + overlap, last.begin() + d)) return d;
    }
    return 0;
  }
  int64_t stride_;
  int64_t lookahead_;
  std::unordered_map<uint64_t, State> state_;
};

}  // namespace mstar::tiny_codec
