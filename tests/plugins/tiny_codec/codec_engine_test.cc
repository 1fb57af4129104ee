// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tiny_codec inside the engine: an echo node (plugins/echo) plays the language model and streams
// its tokens to an `audio` partition whose walk runs tiny_codec on sliding-window chunks; the
// client receives float32 PCM with modality "audio", exactly samples_per_token samples per
// streamed token, the same bytes as decoding the stream directly.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/capture_log.h"
#include "plugins/tiny_codec/codec_driver.h"
#include "plugins/tiny_codec/tiny_weights.h"
#include "runtime/engine/engine_harness.h"

namespace mstar::test {
namespace {

constexpr size_t kSamplesPerToken = 320;

std::string Manifest(int window, int stride, const std::string& codec_extra = "",
                     int token_offset = 0) {
  return R"(format = 1
[model]
name = "codec-only"
max_output_tokens = 256

[nodes.lm]
plugin = "echo"
config = { end_token = 0 }

[nodes.codec]
plugin = "tiny_codec"
config = { weights = ")" +
         TinyCodecWeights() + R"(", stride = )" + std::to_string(stride) + R"(, token_offset = )" +
         std::to_string(token_offset) + codec_extra + R"( }

[streams.audio_tokens]
to = "audio"
policy = "sliding_window"
window = )" +
         std::to_string(window) + "\nstride = " + std::to_string(stride) + R"(

[partitions.main]
initial = "prefill"
transitions = { prefill = "decode" }

[partitions.audio]
initial = "decode_audio"
transitions = { decode_audio = "decode_audio" }

[walks.prefill]
partition = "main"
run = "lm"
inputs = { "lm.tokens" = "request.prompt" }
edges = [
  { from = "lm.token", persist = "last_token" },
  { from = "lm.text", emit = "text", modality = "text", counts_tokens = true },
  { from = "lm.text", stream = "audio_tokens" },
]

[walks.decode]
partition = "main"
run = { loop = "generate", max_iterations = 256, max_iterations_param = "max_tokens", body = "lm" }
inputs = { "lm.tokens" = "persisted.last_token" }
edges = [
  { from = "lm.token", to = "lm.tokens" },
  { from = "lm.text", emit = "text", modality = "text", counts_tokens = true },
  { from = "lm.text", stream = "audio_tokens" },
]

[walks.decode_audio]
partition = "audio"
run = "codec"
inputs = { "codec.chunk" = "stream.audio_tokens" }
edges = [{ from = "codec.pcm", emit = "pcm", modality = "audio" }]
)";
}

// The PCM a request received, from the raw float32 bytes of its "pcm" chunks.
std::vector<float> Pcm(const std::vector<OutputChunk>& chunks) {
  std::vector<float> pcm;
  for (const OutputChunk& c : chunks) {
    EXPECT_EQ(c.bytes.size() % sizeof(float), 0u);
    size_t old = pcm.size();
    pcm.resize(old + c.bytes.size() / sizeof(float));
    std::memcpy(pcm.data() + old, c.bytes.data(), c.bytes.size());
  }
  return pcm;
}

// Runs prompts through the model; each request's text and PCM.
struct Received {
  std::string text;
  std::vector<float> pcm;
  bool done = false;
};

// events: when given, receives the engine's capture log before the session closes.
std::vector<Received> RunModel(const ModelSpec& model, const std::vector<std::string>& prompts,
                               std::vector<CaptureEvent>* events = nullptr) {
  std::vector<Received> out(prompts.size());
  Result<std::unique_ptr<Session>> session = Session::Open(model, TestRegistry(), {});
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return out;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SubmitSpec spec;
    spec.prompt = prompts[i];
    spec.id = i + 1;
    spec.stream = std::make_shared<RequestStream>(i + 1);
    streams.push_back(spec.stream);
    EXPECT_TRUE((*session)->Submit(std::move(spec)).ok());
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    std::vector<OutputChunk> audio;
    OutputChunk chunk;
    while (streams[i]->Next(&chunk)) {
      if (chunk.name == "text") out[i].text.append(chunk.bytes.begin(), chunk.bytes.end());
      if (chunk.name == "pcm") {
        EXPECT_EQ(chunk.modality, "audio");
        audio.push_back(chunk);
      }
    }
    RequestResult result = streams[i]->Wait();
    EXPECT_EQ(result.end, RequestEnd::kDone) << result.error;
    out[i].done = result.end == RequestEnd::kDone;
    out[i].pcm = Pcm(audio);
  }
  if (events != nullptr) {
    if (CaptureLog* log = (*session)->engine().capture_log()) *events = log->Events();
  }
  (*session)->Close();
  return out;
}

TEST(TinyCodecEngine, ClientReceivesSamplesPerTokenForEveryStreamedToken) {
  ModelSpec model = Model(Manifest(8, 4));
  std::vector<std::string> prompts = {"hello world", "a", "the quick brown fox jumps"};
  std::vector<Received> got = RunModel(model, prompts);
  ASSERT_EQ(got.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_TRUE(got[i].done);
    EXPECT_EQ(got[i].text, prompts[i]);
    // The echo streams each prompt byte once (the end token streams nothing).
    EXPECT_EQ(got[i].pcm.size(), prompts[i].size() * kSamplesPerToken) << prompts[i];
  }
}

// With silent_outside_codebook, a token that is no audio token (here a space, 32, under a
// token_offset of 97; in the tiny speech model the end-of-audio token) gives no samples; the
// others' samples are what they are without the option.
TEST(TinyCodecEngine, TokensOutsideTheCodebookAreSilentWhenAsked) {
  const std::string prompt = "ab cd e";
  std::vector<Received> all = RunModel(Model(Manifest(8, 4, "", 97)), {prompt});
  std::vector<Received> sounding =
      RunModel(Model(Manifest(8, 4, ", silent_outside_codebook = true", 97)), {prompt});
  ASSERT_EQ(all[0].pcm.size(), prompt.size() * kSamplesPerToken);
  std::vector<float> expected;
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] == ' ') continue;
    expected.insert(expected.end(), all[0].pcm.begin() + i * kSamplesPerToken,
                    all[0].pcm.begin() + (i + 1) * kSamplesPerToken);
  }
  EXPECT_TRUE(sounding[0].done);
  EXPECT_EQ(sounding[0].pcm, expected);
}

// A codec stride that differs from the stream's, either way, fails the request (instead of
// emitting the wrong number of samples) and says which stride the chunks show.
TEST(TinyCodecEngine, AStrideOtherThanTheStreamsFailsTheRequest) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nodes.codec.config.stride=3",
       "config 'stride' (3) must equal the stream's stride (or "
       "fixed size); these chunks overlap as for a stride of 4"},
      {"streams.audio_tokens.stride=2",
       "config 'stride' (4) must equal the stream's stride (or "
       "fixed size); these chunks overlap as for a stride of 2"}};
  for (const auto& [override, message] : cases) {
    RunOutput run = RunAll(Model(Manifest(8, 4), {override}), {"the quick brown fox jumps"});
    const Outcome& o = run.outcomes[0];
    ASSERT_EQ(o.result.end, RequestEnd::kFailed) << override;
    EXPECT_NE(o.result.error.find(message), std::string::npos)
        << override << ": " << o.result.error;
  }
}

TEST(TinyCodecEngine, PcmEqualsDecodingTheStreamDirectlyAndRepeats) {
  const std::string prompt = "streaming audio tokens";
  ModelSpec model = Model(Manifest(6, 2));
  std::vector<Received> first = RunModel(model, {prompt, prompt});
  std::vector<Received> second = RunModel(model, {prompt});
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(first[0].pcm.size(), prompt.size() * kSamplesPerToken);
  EXPECT_EQ(first[0].pcm, first[1].pcm);
  EXPECT_EQ(first[0].pcm, second[0].pcm);

  // The same windows through the codec directly: rows [2k, 2k + 6), then the final rest.
  std::vector<int64_t> tokens(prompt.begin(), prompt.end());
  CodecDriver codec(2);
  std::vector<float> direct;
  size_t begin = 0;
  for (; begin + 6 <= tokens.size(); begin += 2) {
    auto out = codec.Step({{1, {tokens.begin() + begin, tokens.begin() + begin + 6}}}, false);
    direct.insert(direct.end(), out[0].begin(), out[0].end());
  }
  if (begin + 4 < tokens.size()) {
    auto out = codec.Step({{1, {tokens.begin() + begin, tokens.end()}}}, false);
    direct.insert(direct.end(), out[0].begin(), out[0].end());
  }
  EXPECT_EQ(first[0].pcm, direct);
}

// A codec with lookahead inside the engine: the host sends its partition a final chunk even when
// the stream ends exactly at a window's end (40 tokens: windows 0-15, ..., 24-39), and the client
// receives the samples of decoding the whole stream at once, within rounding.
TEST(TinyCodecEngine, WithLookaheadTheClientGetsTheWholeStreamsSamples) {
  const std::vector<std::string> texts = {"streaming audio tokens through a codec!!",
                                          "streaming audio tokens through a codec with lookahead",
                                          "short"};
  ModelSpec model = Model(Manifest(16, 4, ", lookahead = 4"));
  std::vector<Received> got = RunModel(model, texts);
  ASSERT_EQ(got.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(got[i].done);
    std::vector<int64_t> tokens(texts[i].begin(), texts[i].end());
    CodecDriver whole_codec(1);
    const std::vector<float> whole = whole_codec.Step({{1, tokens}}, false)[0];
    ASSERT_EQ(got[i].pcm.size(), whole.size()) << texts[i];
    for (size_t k = 0; k < whole.size(); ++k)
      ASSERT_NEAR(got[i].pcm[k], whole[k], 1e-5) << texts[i] << " sample " << k;
  }
}

// Capture on (on CPU a replay is the eager forward over the slot's padded rows): full windows
// replay, decoded as one batch per bucket, while a final window shorter than capture_window runs
// eagerly; the client gets the same samples as without capture, to rounding (the batched
// convolution kernels differ in the last bits).
TEST(TinyCodecEngine, CapturedWindowsReplayAndMatchTheEagerSamples) {
  const std::vector<std::string> prompts = {"streaming audio tokens", "captured codec chunks",
                                            "hi"};
  std::vector<Received> eager = RunModel(Model(Manifest(8, 4)), prompts);
  std::vector<CaptureEvent> events;
  std::vector<Received> captured = RunModel(
      Model(Manifest(8, 4, ", capture = true, capture_window = 8, capture_batch_sizes = [1, 4]")),
      prompts, &events);
  ASSERT_EQ(captured.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(captured[i].done);
    ASSERT_EQ(captured[i].pcm.size(), prompts[i].size() * kSamplesPerToken) << prompts[i];
    ASSERT_EQ(captured[i].pcm.size(), eager[i].pcm.size());
    for (size_t k = 0; k < eager[i].pcm.size(); ++k)
      ASSERT_NEAR(captured[i].pcm[k], eager[i].pcm[k], 1e-5) << prompts[i] << " sample " << k;
  }
  auto count = [&](CaptureEventKind kind) {
    size_t n = 0;
    for (const CaptureEvent& e : events) n += e.kind == kind ? 1 : 0;
    return n;
  };
  EXPECT_EQ(count(CaptureEventKind::kCapture), 4u);  // two buckets, two slots each
  EXPECT_GT(count(CaptureEventKind::kReplay), 0u);
  EXPECT_GT(count(CaptureEventKind::kEagerFallback), 0u);  // the short final windows
}

// A bucket's token count (rows x window) is 32-bit: a window past 65536 tokens, or below 0, is
// refused naming the key.
TEST(TinyCodecEngine, CaptureWindowMustBeACountUpTo65536) {
  for (const char* window : {"-1", "2147483648"}) {
    auto made = MakeCodec("weights = \"" + TinyCodecWeights() +
                          "\"\nstride = 4\ncapture_window = " + window + "\n");
    ASSERT_FALSE(made.ok()) << window;
    EXPECT_NE(made.status().message().find("capture_window: must be 0 to 65536 tokens, got " +
                                           std::string(window)),
              std::string::npos)
        << made.status().ToString();
  }
}

}  // namespace
}  // namespace mstar::test
