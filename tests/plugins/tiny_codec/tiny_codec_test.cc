// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny_codec plugin through the real loader and the C ABI: exactly samples_per_token samples
// per streamed token however the engine's chunk policies overlap the windows, determinism,
// batched steps equal to single ones, token-to-code mapping, and config errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "engine/stream_buffer.h"
#include "host/tensor_objects.h"
#include "plugins/tiny_codec/codec_driver.h"
#include "plugins/tiny_codec/tiny_weights.h"

namespace mstar::test {
namespace {

constexpr int64_t kSamplesPerToken = 320;

std::vector<int64_t> AudioTokens(int64_t count, int64_t salt = 0) {
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < count; ++i) tokens.push_back(256 + (i * 37 + salt * 101 + 5) % 1024);
  return tokens;
}

// The chunks the engine's stream buffer cuts `tokens` into, streamed one token at a time.
std::vector<std::vector<int64_t>> EngineChunks(const std::vector<int64_t>& tokens,
                                               ChunkPolicySpec policy, bool always_final = false,
                                               std::vector<bool>* finals = nullptr) {
  StreamBuffer buffer(policy, always_final);
  std::vector<std::vector<int64_t>> chunks;
  auto take = [&] {
    while (buffer.HasChunk()) {
      bool final = false;
      Result<mstar_tensor_t*> chunk = buffer.TakeChunk(&final);
      EXPECT_TRUE(chunk.ok());
      const auto* p = static_cast<const int64_t*>(chunk.value()->dl.data);
      chunks.emplace_back(p, p + TensorNumElements(chunk.value()->dl));
      if (finals != nullptr) finals->push_back(final);
      ReleaseTensor(chunk.value());
    }
  };
  for (int64_t token : tokens) {
    Result<mstar_tensor_t*> one =
        AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1}, {1});
    *static_cast<int64_t*>(one.value()->dl.data) = token;
    EXPECT_TRUE(buffer.Append(*one.value()).ok());
    ReleaseTensor(one.value());
    take();
  }
  buffer.Close();
  take();
  return chunks;
}

ChunkPolicySpec Sliding(uint32_t window, uint32_t stride) {
  return {ChunkPolicySpec::Kind::kSlidingWindow, window, stride};
}

// Decodes a whole stream chunk by chunk; the concatenated PCM.
std::vector<float> DecodeStream(CodecDriver& codec, uint64_t id,
                                const std::vector<std::vector<int64_t>>& chunks) {
  std::vector<float> pcm;
  for (const auto& chunk : chunks) {
    std::vector<std::vector<float>> out = codec.Step({{id, chunk}}, false);
    if (out.size() == 1) pcm.insert(pcm.end(), out[0].begin(), out[0].end());
  }
  return pcm;
}

TEST(TinyCodec, SamplesPerTokenAcrossOverlappingWindows) {
  struct Case {
    ChunkPolicySpec policy;
    int64_t stride;
    int64_t tokens;
  };
  for (const Case& c :
       {Case{Sliding(8, 4), 4, 23}, Case{Sliding(8, 4), 4, 24}, Case{Sliding(6, 1), 1, 9},
        Case{Sliding(4, 4), 4, 10}, Case{Sliding(8, 4), 4, 3},
        Case{{ChunkPolicySpec::Kind::kFixed, 5, 5}, 5, 12}}) {
    CodecDriver codec(c.stride);
    std::vector<std::vector<int64_t>> chunks = EngineChunks(AudioTokens(c.tokens), c.policy);
    size_t samples = 0;
    int64_t fresh_total = 0;
    for (const auto& chunk : chunks) {
      std::vector<std::vector<float>> out = codec.Step({{1, chunk}}, false);
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].size() % kSamplesPerToken, 0u);
      fresh_total += static_cast<int64_t>(out[0].size()) / kSamplesPerToken;
      samples += out[0].size();
    }
    EXPECT_EQ(fresh_total, c.tokens) << "window " << c.policy.window << " stride " << c.stride;
    EXPECT_EQ(samples, static_cast<size_t>(c.tokens * kSamplesPerToken));
  }
}

TEST(TinyCodec, FreshSamplesAreTheWindowsTailDecodedWithItsContext) {
  std::vector<int64_t> tokens = AudioTokens(12);
  CodecDriver streamed(4);
  std::vector<float> first = streamed.Step({{1, {tokens.begin(), tokens.begin() + 8}}}, false)[0];
  std::vector<float> second =
      streamed.Step({{1, {tokens.begin() + 4, tokens.begin() + 12}}}, false)[0];
  ASSERT_EQ(first.size(), 8u * kSamplesPerToken);
  ASSERT_EQ(second.size(), 4u * kSamplesPerToken);

  CodecDriver alone(4);
  std::vector<float> whole = alone.Step({{9, {tokens.begin() + 4, tokens.begin() + 12}}}, false)[0];
  ASSERT_EQ(whole.size(), 8u * kSamplesPerToken);
  EXPECT_EQ(second, std::vector<float>(whole.begin() + 4 * kSamplesPerToken, whole.end()));

  // Audio-like: within (-1, 1), not constant.
  std::set<float> distinct(first.begin(), first.end());
  EXPECT_GT(distinct.size(), first.size() / 2);
  for (float v : first) ASSERT_LT(std::abs(v), 1.0f);
}

// Streams tokens through a codec with `lookahead`, cut as the engine cuts for a consumer that
// declares MSTAR_SUBMODULE_FINAL_CHUNK; the concatenated PCM.
std::vector<float> DecodeWithLookahead(const std::vector<int64_t>& tokens, ChunkPolicySpec policy,
                                       int64_t lookahead) {
  CodecDriver codec(policy.stride, "lookahead = " + std::to_string(lookahead));
  std::vector<bool> finals;
  std::vector<std::vector<int64_t>> chunks = EngineChunks(tokens, policy, true, &finals);
  std::vector<float> pcm;
  for (size_t k = 0; k < chunks.size(); ++k) {
    std::vector<std::vector<float>> out = codec.Step({{1, chunks[k]}}, false, finals[k]);
    if (out.size() == 1) pcm.insert(pcm.end(), out[0].begin(), out[0].end());
  }
  return pcm;
}

float MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  float most = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    most = std::max(most, std::abs(a[i] - b[i]));
  return most;
}

// A token's samples wait for `lookahead` tokens of right context (or the stream's end), so every
// token still gets its samples exactly once, whether the stream ends inside a window, exactly at
// a window's end (the host's repeated final chunk) or before the first window fills.
TEST(TinyCodec, LookaheadEmitsEveryTokenOnceWhereverTheStreamEnds) {
  for (int64_t n : {40, 41, 43, 16, 5, 1}) {
    std::vector<float> pcm = DecodeWithLookahead(AudioTokens(n), Sliding(16, 4), 4);
    EXPECT_EQ(pcm.size(), static_cast<size_t>(n) * kSamplesPerToken) << n << " tokens";
  }
}

// With lookahead and left context both at least the decoder's reach (3 tokens for the tiny
// weights; here 4 tokens of right context, 8 of left), the streamed samples are those of decoding the whole stream as one chunk:
// no seam where windows meet. Without lookahead each window's last tokens are decoded against
// the zero padding past the window's end, and the samples differ from the whole decode.
TEST(TinyCodec, WithLookaheadTheStreamDecodesAsOneWhole) {
  const std::vector<int64_t> tokens = AudioTokens(43);
  CodecDriver whole_codec(1);
  const std::vector<float> whole = whole_codec.Step({{1, tokens}}, false)[0];
  ASSERT_EQ(whole.size(), tokens.size() * kSamplesPerToken);

  const std::vector<float> seamless = DecodeWithLookahead(tokens, Sliding(16, 4), 4);
  ASSERT_EQ(seamless.size(), whole.size());
  EXPECT_LT(MaxDifference(seamless, whole), 1e-5f);

  const std::vector<float> seams = DecodeWithLookahead(tokens, Sliding(16, 4), 0);
  ASSERT_EQ(seams.size(), whole.size());
  EXPECT_GT(MaxDifference(seams, whole), 1e-3f);
}

// Holding tokens back needs windows that overlap by at least the lookahead: a chunk that starts
// after a held-back token fails its step, naming the rule.
TEST(TinyCodec, LookaheadNeedsWindowsThatOverlapByAsMuch) {
  CodecDriver codec(4, "lookahead = 2");
  const std::vector<int64_t> tokens = AudioTokens(8);
  std::vector<std::vector<float>> first;
  ASSERT_TRUE(codec.TryStep({{1, {tokens.begin(), tokens.begin() + 4}}}, &first).ok());
  EXPECT_EQ(first[0].size(), 2u * kSamplesPerToken);
  std::vector<std::vector<float>> second;
  Status s = codec.TryStep({{1, {tokens.begin() + 4, tokens.end()}}}, &second);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chunk 1 starts at stream row 4, after row 2, which was held back "
                             "for right context: with 'lookahead' 2 the stream's windows must "
                             "overlap by at least that many rows"),
            std::string::npos)
      << s.ToString();

  auto negative =
      MakeCodec("weights = \"" + TinyCodecWeights() + "\"\nstride = 4\nlookahead = -1\n");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("lookahead must be >= 0"), std::string::npos)
      << negative.status().ToString();
}

TEST(TinyCodec, Deterministic) {
  std::vector<std::vector<int64_t>> chunks = EngineChunks(AudioTokens(30, 3), Sliding(8, 4));
  CodecDriver a(4), b(4);
  std::vector<float> pa = DecodeStream(a, 1, chunks);
  std::vector<float> pb = DecodeStream(b, 2, chunks);
  ASSERT_EQ(pa.size(), 30u * kSamplesPerToken);
  ASSERT_EQ(pb.size(), pa.size());
  EXPECT_EQ(0, std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)));
}

// Three requests at different points of their streams (chunks of 8, 8 and a final 5 tokens), in
// one forward_batched step and in single steps; each request's samples.
std::vector<std::vector<float>> StepTogetherAndApart(const std::string& config,
                                                     std::vector<std::vector<float>>* apart) {
  std::vector<std::vector<int64_t>> s1 = EngineChunks(AudioTokens(16, 1), Sliding(8, 4));
  std::vector<std::vector<int64_t>> s2 = EngineChunks(AudioTokens(16, 2), Sliding(8, 4));
  std::vector<std::vector<int64_t>> s3 = EngineChunks(AudioTokens(9, 3), Sliding(8, 4));
  EXPECT_EQ(s3.back().size(), 5u);
  CodecDriver batched(4, config), single(4, config);
  // Bring the requests to different chunk indices first (identically in both instances).
  for (CodecDriver* codec : {&batched, &single}) {
    codec->Step({{1, s1[0]}}, false);
    codec->Step({{1, s1[1]}}, false);
    codec->Step({{3, s3[0]}}, false);
  }
  std::vector<std::pair<uint64_t, std::vector<int64_t>>> step = {
      {1, s1[2]}, {2, s2[0]}, {3, s3[1]}};
  *apart = single.Step(step, false);
  return batched.Step(step, true);
}

TEST(TinyCodec, BatchedEqualsPerRequestBitForBit) {
  std::vector<std::vector<float>> apart;
  std::vector<std::vector<float>> together = StepTogetherAndApart("", &apart);
  ASSERT_EQ(together.size(), 3u);
  EXPECT_EQ(together[0].size(), 4u * kSamplesPerToken);
  EXPECT_EQ(together[1].size(), 8u * kSamplesPerToken);
  EXPECT_EQ(together[2].size(), 1u * kSamplesPerToken);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(together[i], apart[i]) << "request " << i + 1;
}

TEST(TinyCodec, WideBatchesMatchPerRequestWithinRounding) {
  std::vector<std::vector<float>> apart;
  std::vector<std::vector<float>> together =
      StepTogetherAndApart("batch_invariant = false\n", &apart);
  ASSERT_EQ(together.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(together[i].size(), apart[i].size()) << "request " << i + 1;
    for (size_t k = 0; k < apart[i].size(); ++k)
      ASSERT_NEAR(together[i][k], apart[i][k], 1e-5) << "request " << i + 1 << " sample " << k;
  }
}

TEST(TinyCodec, TokensMapToCodesModuloTheCodebook) {
  std::vector<int64_t> codes = {0, 5, 1023, 17};
  CodecDriver plain(4);
  std::vector<float> reference = plain.Step({{1, codes}}, false)[0];
  CodecDriver offset(4, "token_offset = 256\n");
  std::vector<int64_t> shifted, wrapped;
  for (int64_t c : codes) {
    shifted.push_back(c + 256);
    wrapped.push_back(c + 256 - 3 * 1024);  // any integer maps to a valid code
  }
  EXPECT_EQ(offset.Step({{1, shifted}}, false)[0], reference);
  EXPECT_EQ(offset.Step({{2, wrapped}}, false)[0], reference);
  EXPECT_NE(offset.Step({{3, codes}}, false)[0], reference);
}

TEST(TinyCodec, CleanupForgetsTheRequest) {
  CodecDriver codec(4);
  std::vector<int64_t> tokens = AudioTokens(8);
  EXPECT_EQ(codec.Step({{1, tokens}}, false)[0].size(), 8u * kSamplesPerToken);
  codec.Cleanup(1);
  EXPECT_EQ(codec.Step({{1, tokens}}, false)[0].size(), 8u * kSamplesPerToken);
}

TEST(TinyCodec, AStrideThatCannotMatchTheStreamFailsTheStepAndChangesNothing) {
  CodecDriver codec(1);
  std::vector<int64_t> tokens = AudioTokens(8);
  codec.Step({{1, tokens}}, false);  // covers rows 0-7
  std::vector<std::vector<float>> pcm;
  // With stride 1 the next chunk starts at row 1, so 2 rows end before row 8.
  Status s = codec.TryStep({{1, {tokens[1], tokens[2]}}}, &pcm);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("config 'stride' (1) must equal the stream's stride"),
            std::string::npos)
      << s.ToString();
  // The failed chunk changed nothing: the next one still starts at row 1.
  std::vector<int64_t> next(tokens.begin() + 1, tokens.end());
  next.push_back(tokens[0]);
  EXPECT_EQ(codec.Step({{1, next}}, false)[0].size(), 1u * kSamplesPerToken);
}

// Chunks overlap by window - stride rows; tokens there that differ from the previous chunk's
// (stream stride 3, node stride 4) prove the stride wrong, before anything is decoded.
TEST(TinyCodec, ChunksThatOverlapOtherwiseThanTheStrideSaysFailTheStep) {
  CodecDriver codec(4);
  const std::vector<int64_t> stream = AudioTokens(11);
  codec.Step({{1, std::vector<int64_t>(stream.begin(), stream.begin() + 8)}}, false);
  std::vector<std::vector<float>> pcm;
  Status s = codec.TryStep({{1, std::vector<int64_t>(stream.begin() + 3, stream.end())}}, &pcm);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("chunk 1 holds token " + std::to_string(stream[3]) +
                             " at stream row 4, where the previous chunk held " +
                             std::to_string(stream[4]) +
                             ": the node's config 'stride' (4) must equal the stream's stride (or "
                             "fixed size); these chunks overlap as for a stride of 3"),
            std::string::npos)
      << s.ToString();
  // The chunk a stream of stride 4 sends next decodes its 4 new tokens.
  std::vector<int64_t> right(stream.begin() + 4, stream.end());
  right.push_back(stream[0]);
  EXPECT_EQ(codec.Step({{1, right}}, false)[0].size(), 4u * kSamplesPerToken);
}

TEST(TinyCodec, ConfigErrorsNameTheProblem) {
  auto missing = MakeCodec("weights = \"/nonexistent/tiny-codec\"\nstride = 4\n");
  ASSERT_FALSE(missing.ok());
  // A missing absolute directory is named at its key, before any file in it is read.
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find(
                "weights: weights directory '/nonexistent/tiny-codec' not found"),
            std::string::npos)
      << missing.status().ToString();

  auto no_stride = MakeCodec("weights = \"" + TinyCodecWeights() + "\"\n");
  ASSERT_FALSE(no_stride.ok());
  EXPECT_NE(no_stride.status().message().find("missing required key 'stride'"), std::string::npos)
      << no_stride.status().ToString();

  // An empty path is not the working directory: it names the key.
  auto empty = MakeCodec("weights = \"\"\nstride = 4\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), Code::kInvalidArgument) << empty.status().ToString();
  EXPECT_NE(empty.status().message().find("weights: must not be empty (the weights directory)"),
            std::string::npos)
      << empty.status().ToString();

  auto relative = MakeCodec("weights = \"no/such/dir\"\nstride = 4\n");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.status().message().find("weights directory 'no/such/dir' not found"),
            std::string::npos)
      << relative.status().ToString();

  // A weights file whose tensor has the wrong shape.
  TempDir dir;
  CopyFile(TinyCodecWeights() + "/model.safetensors", dir.file("model.safetensors"));
  std::string config = ReadFile(TinyCodecWeights() + "/config.json");
  config.replace(config.find("\"dim\": 64"), 9, "\"dim\": 32");
  WriteFile(dir.file("config.json"), config);
  auto wrong = MakeCodec("weights = \"" + dir.path() + "\"\nstride = 4\n");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("tensor 'embed.weight' has shape [1024, 64], expected "
                                          "[1024, 32]"),
            std::string::npos)
      << wrong.status().ToString();

  // A truncated weights file.
  TempDir cut;
  CopyFile(TinyCodecWeights() + "/config.json", cut.file("config.json"));
  std::string bytes = ReadFile(TinyCodecWeights() + "/model.safetensors");
  WriteFile(cut.file("model.safetensors"), bytes.substr(0, bytes.size() / 2));
  auto truncated = MakeCodec("weights = \"" + cut.path() + "\"\nstride = 4\n");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find(cut.file("model.safetensors")), std::string::npos)
      << truncated.status().ToString();
}

}  // namespace
}  // namespace mstar::test
