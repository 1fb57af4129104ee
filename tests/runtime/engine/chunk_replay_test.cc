// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ChunkReplay and a RequestStream replaying through it: after a rewind each output's chunks are
// held back while they repeat what was sent, in order and per output name; the first that differs
// is reported with its place and stops the stream; past what was sent, chunks go out again.
#include "engine/chunk_replay.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/output_stream.h"

namespace mstar {
namespace {

using Verdict = ChunkReplay::Verdict;

OutputChunk Chunk(const std::string& name, int64_t value) {
  OutputChunk chunk;
  chunk.name = name;
  chunk.modality = "tokens";
  chunk.values.push_back(value);
  chunk.bytes.push_back(static_cast<uint8_t>(value));
  return chunk;
}

TEST(ChunkReplay, ChunksRepeatedAfterARewindAreHeldBackUntilTheyAreNew) {
  ChunkReplay replay;
  EXPECT_EQ(replay.Take(Chunk("text", 1)), Verdict::kNew);
  EXPECT_EQ(replay.Take(Chunk("text", 2)), Verdict::kNew);
  replay.Rewind();
  EXPECT_EQ(replay.Take(Chunk("text", 1)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("text", 2)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("text", 3)), Verdict::kNew);
  replay.Rewind();  // a second recomputation expects all three
  EXPECT_EQ(replay.Take(Chunk("text", 1)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("text", 2)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("text", 3)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("text", 4)), Verdict::kNew);
  EXPECT_TRUE(replay.divergence().empty());
}

TEST(ChunkReplay, EachOutputNameKeepsItsOwnOrder) {
  ChunkReplay replay;
  EXPECT_EQ(replay.Take(Chunk("text", 1)), Verdict::kNew);
  EXPECT_EQ(replay.Take(Chunk("audio", 9)), Verdict::kNew);
  EXPECT_EQ(replay.Take(Chunk("text", 2)), Verdict::kNew);
  replay.Rewind();
  // The outputs interleave differently this time: each is compared within its own name.
  EXPECT_EQ(replay.Take(Chunk("text", 1)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("text", 2)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("audio", 9)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("audio", 8)), Verdict::kNew);
}

TEST(ChunkReplay, AChunkThatDiffersIsReportedWithItsPlace) {
  ChunkReplay replay;
  for (int64_t v : {1, 2, 3}) EXPECT_EQ(replay.Take(Chunk("tokens", v)), Verdict::kNew);
  replay.Rewind();
  EXPECT_EQ(replay.Take(Chunk("tokens", 1)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("tokens", 7)), Verdict::kDiverged);
  EXPECT_NE(replay.divergence().find("output 'tokens' chunk 2 of 3 sent before differs"),
            std::string::npos)
      << replay.divergence();
}

TEST(ChunkReplay, ValuesAndBytesBothCount) {
  ChunkReplay replay;
  OutputChunk text = Chunk("text", 300);  // '?' as text: the value tells 300 from 301 apart
  text.bytes.assign(1, '?');
  EXPECT_EQ(replay.Take(text), Verdict::kNew);
  replay.Rewind();
  OutputChunk other = Chunk("text", 301);
  other.bytes.assign(1, '?');
  EXPECT_EQ(replay.Take(other), Verdict::kDiverged);
  // The same value with other bytes (a controller's encoding changed) diverges too.
  ChunkReplay encoded;
  OutputChunk first = Chunk("text", 65);
  first.bytes.assign(1, 'A');
  EXPECT_EQ(encoded.Take(first), Verdict::kNew);
  encoded.Rewind();
  OutputChunk changed = Chunk("text", 65);
  changed.bytes.assign(1, 'a');
  EXPECT_EQ(encoded.Take(changed), Verdict::kDiverged);
}

TEST(ChunkReplay, ChunksOfOtherDataAreComparedBySize) {
  OutputChunk audio;
  audio.name = "audio";
  audio.modality = "audio";
  audio.bytes.assign(8, 1);
  ChunkReplay replay;
  EXPECT_EQ(replay.Take(audio), Verdict::kNew);
  replay.Rewind();
  OutputChunk drifted = audio;  // the last bits of its samples differ in another batch
  drifted.bytes[7] = 2;
  EXPECT_EQ(replay.Take(drifted), Verdict::kRepeated);
  replay.Rewind();
  OutputChunk longer = audio;
  longer.bytes.push_back(1);
  EXPECT_EQ(replay.Take(longer), Verdict::kDiverged);
}

TEST(ChunkReplay, AnOutputNotSentAgainInFullIsReported) {
  ChunkReplay replay;
  for (int64_t v : {1, 2, 3}) EXPECT_EQ(replay.Take(Chunk("tokens", v)), Verdict::kNew);
  EXPECT_EQ(replay.Unrepeated(), "");
  replay.Rewind();
  EXPECT_EQ(replay.Take(Chunk("tokens", 1)), Verdict::kRepeated);
  EXPECT_EQ(replay.Take(Chunk("tokens", 2)), Verdict::kRepeated);
  EXPECT_EQ(replay.Unrepeated(), "output 'tokens' was sent 3 chunks before, and 2 when recomputed");
  EXPECT_EQ(replay.Take(Chunk("tokens", 3)), Verdict::kRepeated);
  EXPECT_EQ(replay.Unrepeated(), "");
}

TEST(RequestStream, AReplayedStreamSendsNothingTwiceAndStopsWhereItDiffers) {
  RequestStream stream(3);
  std::vector<OutputChunk> got;
  stream.SetCallbacks([&](const OutputChunk& chunk) { got.push_back(chunk); }, nullptr);
  stream.RememberChunks();
  EXPECT_TRUE(stream.Push(Chunk("tokens", 1)));
  EXPECT_TRUE(stream.Push(Chunk("tokens", 2)));
  stream.Replay();
  EXPECT_TRUE(stream.Push(Chunk("tokens", 1)));  // held back
  EXPECT_TRUE(stream.Push(Chunk("tokens", 2)));  // held back
  EXPECT_TRUE(stream.Push(Chunk("tokens", 3)));  // new: sent, numbered after the others
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].values[0], 3);
  EXPECT_EQ(got[2].sequence, 2u);
  stream.Replay();
  EXPECT_TRUE(stream.Push(Chunk("tokens", 1)));
  EXPECT_FALSE(stream.Push(Chunk("tokens", 5)));  // differs from the second
  EXPECT_NE(stream.PushFailure().find("chunk 2 of 3"), std::string::npos) << stream.PushFailure();
  EXPECT_FALSE(stream.Push(Chunk("tokens", 3)));  // nothing after a divergence
  EXPECT_EQ(got.size(), 3u);
}

TEST(RequestStream, AStreamThatRemembersNothingIsNotReplayed) {
  RequestStream stream(4);
  EXPECT_TRUE(stream.Push(Chunk("tokens", 1)));
  stream.Replay();  // nothing remembered: nothing held back
  EXPECT_TRUE(stream.Push(Chunk("tokens", 1)));
  OutputChunk chunk;
  ASSERT_TRUE(stream.Next(&chunk));
  ASSERT_TRUE(stream.Next(&chunk));
  EXPECT_EQ(chunk.sequence, 1u);
  EXPECT_TRUE(stream.PushFailure().empty());
}

}  // namespace
}  // namespace mstar
