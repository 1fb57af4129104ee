// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What a chunk tells its client about its bytes: the element type of the tensor they are (the
// default encoding), none for text bytes and a controller's encoding; and that audio chunks of
// each kind read back as the samples the model meant (engine/audio_samples.h).
#include <gtest/gtest.h>

#include "runtime/engine/engine_harness.h"

namespace mstar {
namespace {

using test::Model;
using test::RunAll;

// kit_add over the prompt, its tokens emitted as text and (without a controller, which encodes
// only text and audio) as tokens, and `audio_from` (its
// samples, of samples_dtype, or its tokens) as audio; controller: kit_model (whose decode walk
// then emits nothing), or none.
std::string SamplesModel(const std::string& samples_dtype, bool controller,
                         const std::string& audio_from = "a.samples") {
  return R"(
format = 1
[model]
name = "samples")" +
         std::string(controller ? "\ncontroller = \"kit_model\"\nprompt = \"tokens\"" : "") + R"(
[nodes.a]
plugin = "kit_add"
[nodes.a.config]
add = 0
samples_dtype = ")" +
         samples_dtype + R"("
[partitions.main]
initial = "prefill"
)" + (controller ? "transitions = { prefill = \"decode\" }\n" : "") +
         R"(
[walks.prefill]
partition = "main"
run = "a"
inputs = { "a.tokens" = ")" +
         (controller ? "request.tokens" : "request.prompt") + R"(" }
edges = [
  { from = "a.tokens", emit = "text", modality = "text" },
)" + (controller ? "" : "  { from = \"a.tokens\", emit = \"tokens\", modality = \"tokens\" },\n") +
         R"(  { from = ")" + audio_from +
         R"(", emit = "audio", modality = "audio" },
]
)" +
         (controller ? "[walks.decode]\npartition = \"main\"\nrun = \"a\"\n"
                       "inputs = { \"a.tokens\" = \"request.tokens\" }\n"
                     : "");
}

// Tokens 64 and 128 (the prompt's bytes) as int16 samples are 64 * 256 and 128 * 256, which wraps
// to -32768: 0.5 and -1 at full scale; as float16, 64 / 256 and 128 / 256.
TEST(OutputEncoding, ChunksOfTheDefaultEncodingCarryTheirElementType) {
  const std::pair<const char*, std::vector<float>> cases[] = {{"int16", {0.5f, -1.0f}},
                                                              {"float16", {0.25f, 0.5f}}};
  for (const auto& [dtype, samples] : cases) {
    SCOPED_TRACE(dtype);
    test::RunOutput run = RunAll(Model(SamplesModel(dtype, false)), {"\x40\x80"});
    const test::Outcome& o = run.outcomes[0];
    ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error;
    EXPECT_EQ(o.element_types.at("text"), "");  // one byte per integer: not the tensor's elements
    EXPECT_EQ(o.element_types.at("tokens"), "int64");
    EXPECT_EQ(o.element_types.at("audio"), dtype);
    EXPECT_EQ(o.audio.at("audio"), samples);
  }
}

TEST(OutputEncoding, AControllersEncodingCarriesNoElementTypeAndIsReadAsFloat32) {
  // kit_model encodes audio as float32 token / 256 (the tensor is int64).
  test::RunOutput run = RunAll(Model(SamplesModel("", true, "a.tokens")), {"\x40\x60"});
  const test::Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.result.end, RequestEnd::kDone) << o.result.error << " " << run.open_error;
  EXPECT_EQ(o.element_types.at("audio"), "");
  EXPECT_EQ(o.audio.at("audio"), (std::vector<float>{0.25f, 0.375f}));
}

}  // namespace
}  // namespace mstar
