// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// StreamBuffer: what a producer partition streamed to a consumer partition for one request, cut
// into chunks by the stream's policy.
//
// The buffer holds rows: each tensor a producer step streams adds its first-dimension rows (a
// [1] token adds one row; an empty tensor adds none). Every row must have the dtype and trailing
// shape of the first. Chunks are windows of rows:
//   sliding window (W, S): chunk k is rows [k*S, k*S + W);
//   fixed (C):             chunk k is rows [k*C, k*C + C).
// A chunk is ready when all its rows are there. Once the producer is done, exactly one final
// chunk carries whatever rows no chunk has covered yet: rows [k*S, end) for the next k (so it
// keeps the window's left context). With nothing left uncovered there is no final chunk, unless
// the buffer is made with `always_final` (its consumer holds rows back until the stream ends,
// MSTAR_SUBMODULE_FINAL_CHUNK): then the final chunk is rows [k*S, end) even when an earlier
// chunk held them all, provided there are any (windows that overlap). A full window taken after
// the producer ended and reaching the end is itself the final chunk, except with `always_final`
// over overlapping windows: there the tail chunk follows it as it would have had the window been
// taken before the end; over windows that do not overlap, a window reaching the end of a stream
// still open waits for a later row or the end. So the chunks never depend on when the producer
// ended, and an `always_final` consumer always gets a final chunk when any row came.
//
// Not thread-safe: the conductor serializes access under its lock. Rows live in host memory; rows
// no later chunk can cover are dropped as chunks are taken (a long stream holds about a window's
// rows, not all it ever carried).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <dlpack/dlpack.h>

#include "core/status.h"
#include "model/model_spec.h"
#include "mstar/tensor.h"

namespace mstar {

class StreamBuffer {
 public:
  explicit StreamBuffer(ChunkPolicySpec policy, bool always_final = false)
      : policy_(policy), always_final_(always_final) {}

  // Appends the rows of tensor (borrowed; host memory). kInvalidArgument when its dtype or
  // trailing shape differs from earlier rows, or it is not in host memory.
  Status Append(const mstar_tensor_t& tensor);
  // The producer will append nothing more.
  void Close() { closed_ = true; }
  // The consumer is done (its partition ended before taking every chunk): what is held goes, and
  // rows appended from now on are checked as before, counted and dropped (the producer may run on
  // for its other outputs; nothing will take them).
  void Abandon();
  bool abandoned() const { return abandoned_; }

  // Whether a chunk (full, or the final one) can be taken now.
  bool HasChunk() const { return NextRange().has_value(); }
  // Takes the next chunk as a new host tensor [rows, trailing...] (owned by the caller) and
  // reports whether it is the final one.
  Result<mstar_tensor_t*> TakeChunk(bool* is_final);
  // Closed and every chunk taken: the consumer is done.
  bool Drained() const { return closed_ && !HasChunk(); }

  uint64_t rows() const { return rows_; }
  uint64_t chunks_taken() const { return next_chunk_; }
  // Bytes of rows held (what chunks still to be taken may read).
  uint64_t held_bytes() const { return data_.size(); }
  bool closed() const { return closed_; }

 private:
  struct Range {
    uint64_t begin;
    uint64_t end;
    bool final;
  };
  std::optional<Range> NextRange() const;
  // The first row of the next chunk (no chunk after it reads an earlier row).
  uint64_t NextBegin() const;
  // Drops the rows before NextBegin once they are at least half of what is held.
  void DropTakenRows();

  ChunkPolicySpec policy_;
  bool always_final_ = false;
  bool closed_ = false;
  bool abandoned_ = false;
  bool final_taken_ = false;
  uint64_t rows_ = 0;
  uint64_t next_chunk_ = 0;
  uint64_t covered_ = 0;       // rows covered by the chunks taken so far
  std::vector<uint8_t> data_;  // rows [first_row_, rows_)
  uint64_t first_row_ = 0;
  uint64_t row_bytes_ = 0;
  std::optional<DLDataType> dtype_;
  std::vector<int64_t> trailing_;
};

}  // namespace mstar
