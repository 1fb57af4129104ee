// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// StreamBuffer: sliding-window and fixed chunk policies, the final chunk, Drained(), multi-row,
// empty, 2-D and strided tensors, and what Append rejects.
#include "engine/stream_buffer.h"

#include <gtest/gtest.h>

#include <numeric>

#include "host/tensor_objects.h"

namespace mstar {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kI64{kDLInt, 64, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};

// A borrowed tensor over its own buffer (Append copies; nothing to release).
struct Rows {
  std::vector<int64_t> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  mstar_tensor_t t{};

  // Contiguous int64 rows holding values; shape {n, trailing...}.
  Rows(std::vector<int64_t> values, std::vector<int64_t> dims, DLDataType dtype = kI64,
       DLDevice device = kCpu)
      : data(std::move(values)), shape(std::move(dims)), strides(shape.size()) {
    int64_t running = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      strides[i] = running;
      running *= shape[i];
    }
    Init(dtype, device);
  }
  Rows(std::vector<int64_t> values, std::vector<int64_t> dims, std::vector<int64_t> stride)
      : data(std::move(values)), shape(std::move(dims)), strides(std::move(stride)) {
    Init(kI64, kCpu);
  }
  void Init(DLDataType dtype, DLDevice device) {
    t.struct_size = sizeof(mstar_tensor_t);
    t.struct_version = MSTAR_TENSOR_VERSION;
    t.dl = DLTensor{data.empty() ? nullptr : data.data(),
                    device,
                    static_cast<int32_t>(shape.size()),
                    dtype,
                    shape.data(),
                    strides.data(),
                    0};
  }
};

// One row [1] holding v.
Rows Row(int64_t v) {
  return Rows({v}, {1});
}

std::vector<int64_t> Iota(int64_t begin, int64_t end) {
  std::vector<int64_t> v(static_cast<size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

struct Chunk {
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
  bool final = false;
};

// Takes the next chunk, reads it and releases it.
Chunk Take(StreamBuffer& buffer) {
  Chunk chunk;
  Result<mstar_tensor_t*> t = buffer.TakeChunk(&chunk.final);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return chunk;
  const DLTensor& dl = t.value()->dl;
  EXPECT_EQ(dl.dtype.code, kDLInt);
  EXPECT_EQ(dl.dtype.bits, 64);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  chunk.shape.assign(dl.shape, dl.shape + dl.ndim);
  int64_t n = TensorNumElements(dl);
  const auto* data = static_cast<const int64_t*>(dl.data);
  chunk.values.assign(data, data + n);
  ReleaseTensor(t.value());
  return chunk;
}

using V = std::vector<int64_t>;

ChunkPolicySpec Sliding(uint32_t window, uint32_t stride) {
  return {ChunkPolicySpec::Kind::kSlidingWindow, window, stride};
}
ChunkPolicySpec Fixed(uint32_t size) {
  ChunkPolicySpec p;
  p.kind = ChunkPolicySpec::Kind::kFixed;
  p.window = size;  // stride is the sliding window's; a fixed policy leaves it alone
  return p;
}

// A long stream consumed as it comes holds about a window of rows, and every chunk (the final one
// with its left context) still reads the right rows.
TEST(StreamBuffer, RowsNoLaterChunkReadsAreDropped) {
  for (ChunkPolicySpec policy : {Sliding(4, 2), Sliding(5, 5), Fixed(3)}) {
    StreamBuffer buffer(policy);
    const uint64_t step =
        policy.kind == ChunkPolicySpec::Kind::kFixed ? policy.window : policy.stride;
    uint64_t taken = 0, most_held = 0;
    for (int64_t v = 0; v < 1001; ++v) {
      Rows row = Row(v);
      ASSERT_TRUE(buffer.Append(row.t).ok());
      while (buffer.HasChunk()) {
        Chunk chunk = Take(buffer);
        const auto begin = static_cast<int64_t>(taken * step);
        EXPECT_EQ(chunk.values, Iota(begin, begin + policy.window)) << taken;
        ++taken;
      }
      most_held = std::max(most_held, buffer.held_bytes());
    }
    EXPECT_LE(most_held, 4 * policy.window * sizeof(int64_t));  // not the 1001 rows carried
    buffer.Close();
    ASSERT_TRUE(buffer.HasChunk());
    Chunk last = Take(buffer);
    EXPECT_TRUE(last.final);
    const auto begin = static_cast<int64_t>(taken * step);
    EXPECT_EQ(last.values, Iota(begin, 1001));
    EXPECT_TRUE(buffer.Drained());
  }
}

// A consumer done early abandons its stream: what was held goes, later rows are still checked,
// counted and dropped, no chunk is ready again, and the stream drains once closed.
TEST(StreamBuffer, AnAbandonedStreamHoldsNothingMore) {
  StreamBuffer buffer(Sliding(4, 2));
  for (int64_t v = 0; v < 6; ++v) ASSERT_TRUE(buffer.Append(Row(v).t).ok());
  ASSERT_TRUE(buffer.HasChunk());
  buffer.Abandon();
  EXPECT_TRUE(buffer.abandoned());
  EXPECT_EQ(buffer.held_bytes(), 0u);
  EXPECT_FALSE(buffer.HasChunk());
  for (int64_t v = 6; v < 1000; ++v) ASSERT_TRUE(buffer.Append(Row(v).t).ok());
  EXPECT_EQ(buffer.held_bytes(), 0u);
  EXPECT_EQ(buffer.rows(), 1000u);
  Rows other({1, 2}, {1, 2});  // another trailing shape: still an error
  EXPECT_FALSE(buffer.Append(other.t).ok());
  EXPECT_FALSE(buffer.HasChunk());
  EXPECT_FALSE(buffer.Drained());
  buffer.Close();
  EXPECT_TRUE(buffer.Drained());
}

TEST(StreamBuffer, SlidingWindowOverSingleRows) {
  StreamBuffer buffer(Sliding(4, 2));
  std::vector<Chunk> chunks;
  for (int64_t v = 0; v < 7; ++v) {
    Rows row = Row(10 + v);
    ASSERT_TRUE(buffer.Append(row.t).ok());
    EXPECT_EQ(buffer.rows(), static_cast<uint64_t>(v + 1));
    // Chunks become ready at rows 4 and 6, exactly once each.
    EXPECT_EQ(buffer.HasChunk(), v == 3 || v == 5) << v;
    if (buffer.HasChunk()) chunks.push_back(Take(buffer));
    EXPECT_FALSE(buffer.HasChunk());
  }
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].values, (V{10, 11, 12, 13}));
  EXPECT_EQ(chunks[0].shape, V{4});
  EXPECT_FALSE(chunks[0].final);
  EXPECT_EQ(chunks[1].values, (V{12, 13, 14, 15}));
  EXPECT_FALSE(chunks[1].final);
  EXPECT_FALSE(buffer.Drained());
  buffer.Close();
  EXPECT_TRUE(buffer.closed());
  ASSERT_TRUE(buffer.HasChunk());
  EXPECT_FALSE(buffer.Drained());
  Chunk last = Take(buffer);
  EXPECT_EQ(last.values, (V{14, 15, 16}));  // [4, 7): keeps the window's left context
  EXPECT_EQ(last.shape, V{3});
  EXPECT_TRUE(last.final);
  EXPECT_TRUE(buffer.Drained());
  EXPECT_EQ(buffer.chunks_taken(), 3u);
  bool is_final = false;
  Result<mstar_tensor_t*> none = buffer.TakeChunk(&is_final);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kFailedPrecondition);
}

TEST(StreamBuffer, SlidingFinalChunkStartsAtTheNextWindow) {
  StreamBuffer buffer(Sliding(4, 2));
  Rows rows(Iota(0, 5), {5});
  ASSERT_TRUE(buffer.Append(rows.t).ok());
  EXPECT_EQ(Take(buffer).values, (V{0, 1, 2, 3}));
  EXPECT_FALSE(buffer.HasChunk());
  buffer.Close();
  Chunk last = Take(buffer);
  EXPECT_EQ(last.values, (V{2, 3, 4}));  // [2, 5)
  EXPECT_TRUE(last.final);
  EXPECT_TRUE(buffer.Drained());
}

TEST(StreamBuffer, FixedChunksDoNotOverlap) {
  StreamBuffer buffer(Fixed(3));
  for (int64_t v = 0; v < 7; ++v) {
    Rows row = Row(v);
    ASSERT_TRUE(buffer.Append(row.t).ok());
  }
  Chunk first = Take(buffer);
  EXPECT_EQ(first.values, (V{0, 1, 2}));
  EXPECT_FALSE(first.final);
  Chunk second = Take(buffer);
  EXPECT_EQ(second.values, (V{3, 4, 5}));
  EXPECT_FALSE(second.final);
  EXPECT_FALSE(buffer.HasChunk());  // row 6 waits for more, or for Close
  buffer.Close();
  Chunk last = Take(buffer);
  EXPECT_EQ(last.values, V{6});
  EXPECT_EQ(last.shape, V{1});
  EXPECT_TRUE(last.final);
  EXPECT_TRUE(buffer.Drained());
}

TEST(StreamBuffer, NoFinalChunkWhenEverythingIsCovered) {
  StreamBuffer fixed(Fixed(3));
  Rows six(Iota(0, 6), {6});
  ASSERT_TRUE(fixed.Append(six.t).ok());
  fixed.Close();
  EXPECT_EQ(Take(fixed).values, (V{0, 1, 2}));
  Chunk second = Take(fixed);
  EXPECT_EQ(second.values, (V{3, 4, 5}));
  EXPECT_TRUE(second.final);  // a full chunk, and the last: it reaches the closed stream's end
  EXPECT_FALSE(fixed.HasChunk());
  EXPECT_TRUE(fixed.Drained());
  EXPECT_EQ(fixed.chunks_taken(), 2u);

  StreamBuffer sliding(Sliding(4, 2));
  ASSERT_TRUE(sliding.Append(six.t).ok());
  EXPECT_EQ(Take(sliding).values, (V{0, 1, 2, 3}));
  EXPECT_EQ(Take(sliding).values, (V{2, 3, 4, 5}));
  sliding.Close();
  EXPECT_FALSE(sliding.HasChunk());
  EXPECT_TRUE(sliding.Drained());
}

TEST(StreamBuffer, DrainedNeedsCloseAndEveryChunk) {
  StreamBuffer empty(Sliding(4, 2));
  EXPECT_FALSE(empty.Drained());  // open: more may come
  empty.Close();
  EXPECT_FALSE(empty.HasChunk());  // nothing streamed: no chunk at all
  EXPECT_TRUE(empty.Drained());

  StreamBuffer short_stream(Sliding(4, 2));
  Rows two(V{7, 8}, {2});
  ASSERT_TRUE(short_stream.Append(two.t).ok());
  EXPECT_FALSE(short_stream.HasChunk());
  EXPECT_FALSE(short_stream.Drained());
  short_stream.Close();
  EXPECT_FALSE(short_stream.Drained());  // the final chunk is still to take
  Chunk only = Take(short_stream);
  EXPECT_EQ(only.values, (V{7, 8}));  // fewer rows than a window
  EXPECT_TRUE(only.final);
  EXPECT_TRUE(short_stream.Drained());

  StreamBuffer full(Fixed(2));
  ASSERT_TRUE(full.Append(two.t).ok());
  full.Close();
  EXPECT_FALSE(full.Drained());   // a full chunk is waiting
  EXPECT_TRUE(Take(full).final);  // full, and the closed stream's last
  EXPECT_TRUE(full.Drained());
}

// A consumer that holds rows back gets a final chunk even when every row was covered: the rows
// from the next window's start, marked final; once. A full window taken after the close that
// reaches the end is the final chunk itself. Chunks that do not overlap leave nothing to repeat:
// their last window waits for a later row or the close, so it is always the final one.
TEST(StreamBuffer, AlwaysFinalRepeatsTheLastWindowsTailWhenNothingIsUncovered) {
  Rows six(Iota(0, 6), {6});
  StreamBuffer sliding(Sliding(4, 2), /*always_final=*/true);
  ASSERT_TRUE(sliding.Append(six.t).ok());
  EXPECT_FALSE(Take(sliding).final);
  EXPECT_FALSE(Take(sliding).final);  // rows 2..5: the producer is still open
  EXPECT_FALSE(sliding.HasChunk());
  sliding.Close();
  ASSERT_TRUE(sliding.HasChunk());
  Chunk last = Take(sliding);
  EXPECT_EQ(last.values, (V{4, 5}));  // rows [2 * 2, 6)
  EXPECT_TRUE(last.final);
  EXPECT_FALSE(sliding.HasChunk());
  EXPECT_TRUE(sliding.Drained());

  // Closed before the windows are taken: the same chunks (a recomputed request, whose producer
  // may end at another moment, gets the same ones).
  StreamBuffer closed_first(Sliding(4, 2), /*always_final=*/true);
  ASSERT_TRUE(closed_first.Append(six.t).ok());
  closed_first.Close();
  EXPECT_FALSE(Take(closed_first).final);
  Chunk end = Take(closed_first);
  EXPECT_EQ(end.values, (V{2, 3, 4, 5}));
  EXPECT_FALSE(end.final);
  Chunk tail = Take(closed_first);
  EXPECT_EQ(tail.values, (V{4, 5}));
  EXPECT_TRUE(tail.final);
  EXPECT_TRUE(closed_first.Drained());

  for (const ChunkPolicySpec& policy : {Fixed(3), Sliding(3, 3)}) {
    StreamBuffer open(policy, /*always_final=*/true);
    ASSERT_TRUE(open.Append(six.t).ok());
    EXPECT_FALSE(Take(open).final);
    EXPECT_FALSE(open.HasChunk());  // rows 3..5 reach the end of a stream still open
    open.Close();
    Chunk held = Take(open);
    EXPECT_EQ(held.values, (V{3, 4, 5}));
    EXPECT_TRUE(held.final);
    EXPECT_TRUE(open.Drained());
    // Closed first: the same chunks.
    StreamBuffer closed(policy, /*always_final=*/true);
    ASSERT_TRUE(closed.Append(six.t).ok());
    closed.Close();
    EXPECT_FALSE(Take(closed).final);
    EXPECT_TRUE(Take(closed).final);
    EXPECT_TRUE(closed.Drained());
    // A row after the window lets it go as an ordinary chunk.
    StreamBuffer longer(policy, /*always_final=*/true);
    ASSERT_TRUE(longer.Append(six.t).ok());
    ASSERT_TRUE(longer.Append(Row(6).t).ok());
    EXPECT_FALSE(Take(longer).final);
    EXPECT_FALSE(Take(longer).final);
    longer.Close();
    Chunk rest = Take(longer);
    EXPECT_EQ(rest.values, (V{6}));
    EXPECT_TRUE(rest.final);
  }

  StreamBuffer empty(Sliding(4, 2), /*always_final=*/true);
  empty.Close();
  EXPECT_FALSE(empty.HasChunk());
  EXPECT_TRUE(empty.Drained());
}

TEST(StreamBuffer, MultiRowAndEmptyTensors) {
  StreamBuffer buffer(Sliding(4, 2));
  Rows three(V{0, 1, 2}, {3});
  Rows none(V{}, {0});
  Rows two(V{3, 4}, {2});
  ASSERT_TRUE(buffer.Append(none.t).ok());
  EXPECT_EQ(buffer.rows(), 0u);
  ASSERT_TRUE(buffer.Append(three.t).ok());
  ASSERT_TRUE(buffer.Append(none.t).ok());
  EXPECT_EQ(buffer.rows(), 3u);
  EXPECT_FALSE(buffer.HasChunk());
  ASSERT_TRUE(buffer.Append(two.t).ok());
  EXPECT_EQ(buffer.rows(), 5u);
  EXPECT_EQ(Take(buffer).values, (V{0, 1, 2, 3}));
  EXPECT_FALSE(buffer.HasChunk());
  Rows more(V{5, 6, 7, 8, 9}, {5});
  ASSERT_TRUE(buffer.Append(more.t).ok());  // rows 10: windows [2, 6) and [4, 8) ready
  EXPECT_EQ(Take(buffer).values, (V{2, 3, 4, 5}));
  EXPECT_EQ(Take(buffer).values, (V{4, 5, 6, 7}));
  EXPECT_EQ(Take(buffer).values, (V{6, 7, 8, 9}));
  EXPECT_FALSE(buffer.HasChunk());
  buffer.Close();
  EXPECT_TRUE(buffer.Drained());
}

TEST(StreamBuffer, TwoDimensionalRowsKeepTheirTrailingShape) {
  StreamBuffer buffer(Fixed(3));
  Rows a(Iota(0, 6), {2, 3});
  Rows b(Iota(6, 9), {1, 3});
  ASSERT_TRUE(buffer.Append(a.t).ok());
  ASSERT_TRUE(buffer.Append(b.t).ok());
  EXPECT_EQ(buffer.rows(), 3u);
  Chunk chunk = Take(buffer);
  EXPECT_EQ(chunk.shape, (V{3, 3}));
  EXPECT_EQ(chunk.values, Iota(0, 9));

  // Rows that are not adjacent in memory (a view with padding between rows) stream correctly.
  Rows padded(V{9, 10, 11, -1, 12, 13, 14, -1}, {2, 3}, V{4, 1});
  ASSERT_TRUE(buffer.Append(padded.t).ok());
  buffer.Close();
  Chunk last = Take(buffer);
  EXPECT_EQ(last.shape, (V{2, 3}));
  EXPECT_EQ(last.values, Iota(9, 15));
  EXPECT_TRUE(last.final);
}

TEST(StreamBuffer, RejectsMismatchedAndForeignTensors) {
  StreamBuffer buffer(Sliding(2, 1));
  Rows first(V{1, 2}, {1, 2});
  ASSERT_TRUE(buffer.Append(first.t).ok());

  Rows other_dtype(V{0, 0}, {1, 2}, kF32);
  Status s = buffer.Append(other_dtype.t);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  Rows other_trailing(V{0, 0, 0}, {1, 3});
  EXPECT_EQ(buffer.Append(other_trailing.t).code(), Code::kInvalidArgument);
  Rows flat(V{0, 0}, {2});
  EXPECT_EQ(buffer.Append(flat.t).code(), Code::kInvalidArgument);
  Rows scalar(V{0}, {});
  EXPECT_EQ(buffer.Append(scalar.t).code(), Code::kInvalidArgument);
  Rows on_gpu(V{3, 4}, {1, 2}, kI64, DLDevice{kDLCUDA, 0});
  EXPECT_EQ(buffer.Append(on_gpu.t).code(), Code::kInvalidArgument);
  Rows in_row_gap(V{3, 0, 4, 0}, {1, 2}, V{4, 2});  // elements of a row not contiguous
  EXPECT_EQ(buffer.Append(in_row_gap.t).code(), Code::kInvalidArgument);
  EXPECT_EQ(buffer.rows(), 1u);  // nothing rejected was added

  Rows pinned(V{3, 4}, {1, 2}, kI64, DLDevice{kDLCUDAHost, 0});  // host memory
  ASSERT_TRUE(buffer.Append(pinned.t).ok());
  Chunk chunk = Take(buffer);
  EXPECT_EQ(chunk.shape, (V{2, 2}));
  EXPECT_EQ(chunk.values, (V{1, 2, 3, 4}));

  StreamBuffer gpu_first(Fixed(1));
  EXPECT_EQ(gpu_first.Append(on_gpu.t).code(), Code::kInvalidArgument);
  EXPECT_EQ(gpu_first.rows(), 0u);
  EXPECT_FALSE(gpu_first.HasChunk());
}

}  // namespace
}  // namespace mstar
