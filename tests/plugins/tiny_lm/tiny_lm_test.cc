// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny_lm plugin against HF transformers: greedy tokens equal the reference exactly, for
// single requests and mixed prefill/decode batches over a scrambled paged KV cache, and a single
// request's last prompt logits agree within 1e-4 relative; a request's output does not depend on its batch
// companions (also where a long prompt's attention runs apart from theirs); seeded sampling reproduces; prefix hits skip cached tokens; errors name the culprit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "attention_groups.h"  // plugins/tiny_lm
#include "plugins/tiny_lm/tiny_lm_harness.h"
#include "support/test_support.h"

namespace mstar::test {
namespace {

using tiny_lm::AttentionGroupPlan;
using tiny_lm::AttentionShape;
using tiny_lm::GroupForAttention;

const char* const kModels[] = {"llama_mha_tied", "llama_gqa2_untied", "qwen3_gqa4_untied"};

std::string ConfigFor(const Reference& r, const std::string& extra = "") {
  return "weights = \"" + r.dir + "\"\n" + extra;
}

// |a - b| <= 1e-4 * max |b| over the vector.
void ExpectLogitsNear(const std::vector<float>& actual, const std::vector<float>& expected,
                      const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  float scale = 0;
  for (float v : expected) scale = std::max(scale, std::abs(v));
  float worst = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    worst = std::max(worst, std::abs(actual[i] - expected[i]));
  EXPECT_LE(worst, 1e-4f * scale) << what << ": worst difference " << worst << " of scale "
                                  << scale;
}

class TinyLmReference : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyLmReference, SingleRequestsMatchHf) {
  Reference r = LoadReference(GetParam());
  TinyLmHarness lm(ConfigFor(r));
  for (size_t c = 0; c < r.cases.size(); ++c) {
    const ReferenceCase& ref = r.cases[c];
    auto kv = MakeKv(r);
    LmRequest request(c + 1, 7);
    // Prefill alone through forward (the engine's one-request path), then decode.
    std::vector<StepResult> first = lm.Step(*kv, {&request}, {ref.prompt}, {}, /*batched=*/false);
    ExpectLogitsNear(first[0].logits, ref.prompt_logits,
                     "prompt logits, case " + std::to_string(c));
    std::vector<int64_t> tokens{first[0].token};
    while (tokens.size() < ref.greedy.size() && !HasFailure())
      tokens.push_back(lm.Step(*kv, {&request}, {{tokens.back()}})[0].token);
    EXPECT_EQ(tokens, ref.greedy) << "case " << c;
    EXPECT_EQ(kv->length(c + 1), static_cast<int64_t>(ref.prompt.size() + ref.greedy.size() - 1));
  }
}

TEST_P(TinyLmReference, MixedPrefillAndDecodeBatchesMatchHf) {
  Reference r = LoadReference(GetParam());
  TinyLmHarness lm(ConfigFor(r));
  auto kv = MakeKv(r);
  LmRequest a(1, 1), b(2, 2), c(3, 3);
  std::vector<std::vector<int64_t>> prompts;
  for (const ReferenceCase& ref : r.cases) prompts.push_back(ref.prompt);
  // a starts alone; b's prefill joins a's decode; c's prefill joins both decodes two steps later.
  auto out = lm.Generate(*kv, {&a, &b, &c}, prompts, 12, {0, 1, 3});
  for (size_t i = 0; i < r.cases.size(); ++i) EXPECT_EQ(out[i], r.cases[i].greedy) << "case " << i;
}

// A step whose last request has fewer rows than an earlier one of its attention group: the
// padding rows come after every real row, and only the real ones may leave attention.
TEST_P(TinyLmReference, ALongerPromptBeforeShorterRequestsInOneStep) {
  Reference r = LoadReference(GetParam());
  TinyLmHarness lm(ConfigFor(r));
  auto kv = MakeKv(r);
  const ReferenceCase &shorter = r.cases[0], &longer = r.cases[1];
  ASSERT_GT(longer.prompt.size(), shorter.prompt.size());
  LmRequest a(1, 0), b(2, 0), c(3, 0);
  std::vector<StepResult> prefills = lm.Step(*kv, {&b, &a}, {longer.prompt, shorter.prompt});
  EXPECT_EQ(prefills[0].token, longer.greedy[0]);
  EXPECT_EQ(prefills[1].token, shorter.greedy[0]);
  // A prefill, then a decode.
  std::vector<StepResult> mixed = lm.Step(*kv, {&c, &a}, {r.cases[2].prompt, {prefills[1].token}});
  EXPECT_EQ(mixed[0].token, r.cases[2].greedy[0]);
  EXPECT_EQ(mixed[1].token, shorter.greedy[1]);
}

TEST_P(TinyLmReference, PrefixHitComputesOnlyTheUncachedTail) {
  Reference r = LoadReference(GetParam());
  TinyLmHarness lm(ConfigFor(r));
  auto kv = MakeKv(r);
  const ReferenceCase& ref = r.cases[2];  // 13 tokens: 3 full pages of 4, then 1
  // Other tokens where the cache holds the prompt's: computing a cached position would write
  // their K/V over the shared pages, and the logits (and first's next token) would show it.
  auto junk_before = [&](size_t cached) {
    std::vector<int64_t> tokens = ref.prompt;
    for (size_t i = 0; i < cached; ++i) tokens[i] = (tokens[i] + 1) % r.vocab;
    return tokens;
  };
  LmRequest first(1, 0), second(2, 0);
  std::vector<StepResult> prefill = lm.Step(*kv, {&first}, {ref.prompt});
  // second's first 12 tokens are first's pages (never written by second's step: the pool is
  // NaN-poisoned, so computing them into the wrong place would show in the logits).
  kv->SharePrefix(1, 2, 12);
  std::vector<StepResult> hit = lm.Step(*kv, {&second}, {junk_before(12)}, {12});
  ExpectLogitsNear(hit[0].logits, ref.prompt_logits, "logits after a prefix hit");
  EXPECT_EQ(hit[0].token, ref.greedy[0]);
  // The pages second shared are as first left them.
  EXPECT_EQ(lm.Step(*kv, {&first}, {{prefill[0].token}})[0].token, ref.greedy[1]);
  // A hit covering the whole prompt still computes the last token, as a fresh prefill does.
  std::vector<int64_t> twelve(ref.prompt.begin(), ref.prompt.begin() + 12);
  LmRequest third(3, 0), fresh(4, 0);
  kv->SharePrefix(1, 3, 12);
  std::vector<int64_t> junk_twelve = junk_before(11);
  junk_twelve.resize(12);
  hit = lm.Step(*kv, {&third}, {junk_twelve}, {12});
  std::vector<StepResult> uncached = lm.Step(*kv, {&fresh}, {twelve});
  ExpectLogitsNear(hit[0].logits, uncached[0].logits, "logits after a hit on the whole prompt");
}

TEST_P(TinyLmReference, ALongPromptAmongShortOnesIsAttendedApartAndMatchesItsRunAlone) {
  Reference r = LoadReference(GetParam());
  TinyLmHarness lm(ConfigFor(r));
  std::vector<int64_t> long_prompt(120);
  for (size_t i = 0; i < long_prompt.size(); ++i)
    long_prompt[i] = static_cast<int64_t>(i * 7 + 3) % r.vocab;
  auto alone_kv = MakeKv(r);
  LmRequest alone(9, 0);
  std::vector<StepResult> solo = lm.Step(*alone_kv, {&alone}, {long_prompt});

  // a and c start; then b's and the long prompt's prefills join their decodes. The step's
  // attention splits into groups that interleave in step order (checked here, so the test keeps
  // covering that): the long prompt with b, a with c.
  const std::vector<int64_t>&pa = r.cases[0].prompt, &pb = r.cases[1].prompt,
        &pc = r.cases[2].prompt;
  std::vector<AttentionShape> shapes{
      {1, static_cast<int64_t>(pa.size()) + 1},
      {static_cast<int64_t>(long_prompt.size()), static_cast<int64_t>(long_prompt.size())},
      {static_cast<int64_t>(pb.size()), static_cast<int64_t>(pb.size())},
      {1, static_cast<int64_t>(pc.size()) + 1}};
  std::vector<AttentionGroupPlan> groups = GroupForAttention(shapes);
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].members, (std::vector<int64_t>{0, 3}));

  auto kv = MakeKv(r);
  LmRequest a(1, 0), long_request(2, 0), b(3, 0), c(4, 0);
  std::vector<StepResult> first = lm.Step(*kv, {&a, &c}, {pa, pc});
  std::vector<StepResult> mixed = lm.Step(*kv, {&a, &long_request, &b, &c},
                                          {{first[0].token}, long_prompt, pb, {first[1].token}});
  ExpectLogitsNear(mixed[1].logits, solo[0].logits, "the long prompt's logits, batched");
  EXPECT_EQ(mixed[1].token, solo[0].token);
  EXPECT_EQ(first[0].token, r.cases[0].greedy[0]);
  EXPECT_EQ(mixed[0].token, r.cases[0].greedy[1]);
  EXPECT_EQ(mixed[2].token, r.cases[1].greedy[0]);
  EXPECT_EQ(mixed[3].token, r.cases[2].greedy[1]);
  // A decode step over the same four contexts.
  std::vector<StepResult> next =
      lm.Step(*kv, {&a, &long_request, &b, &c},
              {{mixed[0].token}, {mixed[1].token}, {mixed[2].token}, {mixed[3].token}});
  std::vector<StepResult> solo_next = lm.Step(*alone_kv, {&alone}, {{solo[0].token}});
  ExpectLogitsNear(next[1].logits, solo_next[0].logits, "the long prompt's next logits");
  EXPECT_EQ(next[0].token, r.cases[0].greedy[2]);
  EXPECT_EQ(next[2].token, r.cases[1].greedy[1]);
  EXPECT_EQ(next[3].token, r.cases[2].greedy[2]);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TinyLmReference, ::testing::ValuesIn(kModels));

TEST(TinyLm, SampledOutputIsIndependentOfBatchCompanions) {
  Reference r = LoadReference("qwen3_gqa4_untied");
  TinyLmHarness lm(ConfigFor(r));
  const std::string params = "temperature = 0.9\ntop_k = 40\ntop_p = 0.95\n";
  std::vector<std::vector<int64_t>> prompts{r.cases[0].prompt, r.cases[1].prompt,
                                            r.cases[2].prompt};
  auto alone_kv = MakeKv(r);
  LmRequest alone(1, 42, params);
  auto solo = lm.Generate(*alone_kv, {&alone}, {prompts[1]}, 12);

  auto kv = MakeKv(r);
  LmRequest x(5, 9, params), target(6, 42, params), y(7, 11, "temperature = 0\n");
  auto together = lm.Generate(*kv, {&x, &target, &y}, prompts, 12, {0, 2, 1});
  EXPECT_EQ(together[1], solo[0]);
  EXPECT_NE(together[0], together[1]);  // companions really ran something else
}

TEST(TinyLm, SeededSamplingReproducesAndSeedsDiffer) {
  Reference r = LoadReference("llama_gqa2_untied");
  TinyLmHarness lm(ConfigFor(r));
  auto run = [&](uint64_t seed) {
    auto kv = MakeKv(r);
    LmRequest request(1, seed, "temperature = 1.0\n");
    return lm.Generate(*kv, {&request}, {r.cases[0].prompt}, 12)[0];
  };
  std::vector<int64_t> first = run(123);
  EXPECT_EQ(run(123), first);
  EXPECT_NE(run(124), first);
  EXPECT_NE(first, r.cases[0].greedy);  // temperature 1 is not greedy on these logits
}

TEST(TinyLm, StopCheckEndsTheInnermostLoopAtEndToken) {
  Reference r = LoadReference("llama_mha_tied");
  TinyLmHarness lm(ConfigFor(r, "end_token = 15\n"));
  LmRequest request(1, 0);
  EXPECT_EQ(lm.CheckStop(request, 14), 0u);
  EXPECT_EQ(lm.CheckStop(request, 15), 1u);
  // Outside a loop (a prefill sampled it) the partition ends: no decode loop follows.
  LmRequest prefill(2, 0);
  prefill.info.num_loops = 0;
  EXPECT_EQ(lm.CheckStop(prefill, 15), MSTAR_STOP_PARTITION);
  EXPECT_EQ(lm.CheckStop(prefill, 14), 0u);
  TinyLmHarness never(ConfigFor(r));
  EXPECT_EQ(never.CheckStop(request, 15), 0u);
}

// A token at the model's last position (128 in the fixtures) ends the loop whatever it is: no
// step could take it in. The stop check reads it from 'position', which stop_outputs lists (the
// engine hands the stop check only those when an output is in device memory).
TEST(TinyLm, StopCheckEndsTheLoopAtTheModelsLastPosition) {
  Reference r = LoadReference("llama_mha_tied");
  TinyLmHarness lm(ConfigFor(r));
  LmRequest request(1, 0);
  EXPECT_EQ(lm.CheckStop(request, 14, 127), 0u);
  EXPECT_EQ(lm.CheckStop(request, 14, 128), 1u);
  LmRequest prefill(2, 0);
  prefill.info.num_loops = 0;
  EXPECT_EQ(lm.CheckStop(prefill, 14, 128), MSTAR_STOP_PARTITION);
  const mstar_submodule_vtable_t* table = lm.instance().submodule();
  mstar_submodule_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
  ASSERT_TRUE(TakeStatus(table->info(lm.instance().self(), &info)).ok());
  std::vector<std::string> stop_outputs(info.stop_outputs,
                                        info.stop_outputs + info.num_stop_outputs);
  EXPECT_EQ(stop_outputs, (std::vector<std::string>{"tokens", "position"}));
}

// Config values that would make the model misbehave quietly (never stop, no batch cap, NaN logits)
// are refused at creation, naming the key.
TEST(TinyLm, ValuesThatCannotWorkAreRefusedNamingTheKey) {
  Reference r = LoadReference("llama_mha_tied");
  auto refused = [&](const std::string& config, const std::string& message) {
    Status status = TinyLmHarness::TryCreate(config);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << config;
    EXPECT_NE(status.message().find(message), std::string::npos) << status.ToString();
  };
  refused(ConfigFor(r, "end_token = 96\n"),
          "end_token: 96 is not a token of the vocabulary (0 to 95); -1 for none");
  refused(ConfigFor(r, "end_token = -2\n"), "end_token: -2 is not a token of the vocabulary");
  refused(ConfigFor(r, "max_batch = -1\n"), "max_batch: must be 0 (no cap) or a number of");
  for (const char* key : {"rms_norm_eps", "rope_theta"}) {
    TempDir dir;
    nlohmann::json config = nlohmann::json::parse(ReadFile(r.dir + "/config.json"));
    config[key] = -1.0;
    if (config.contains("rope_parameters") && config["rope_parameters"].is_object())
      config["rope_parameters"]["rope_theta"] = -1.0;  // where newer configs keep it
    WriteFile(dir.file("config.json"), config.dump());
    std::filesystem::copy_file(r.dir + "/model.safetensors", dir.file("model.safetensors"));
    refused("weights = \"" + dir.path() + "\"\n", std::string(key) + " must be a positive number");
  }
  // head_dim from hidden_size / num_attention_heads that comes out 0, and a position count that
  // would size a RoPE table past any use.
  for (const auto& [edit, message] : std::vector<std::pair<nlohmann::json, std::string>>{
           {{{"num_attention_heads", 1024}, {"num_key_value_heads", 1024}}, "head_dim is 0"},
           {{{"max_position_embeddings", 100000000}},
            "max_position_embeddings 100000000 is more than 16777216"},
           // Counts whose products (heads x head_dim) would wrap 64 bits.
           {{{"num_attention_heads", int64_t{1} << 62}, {"num_key_value_heads", int64_t{1} << 62}},
            "'num_attention_heads' must be a positive integer below 2^31"}}) {
    TempDir dir;
    nlohmann::json config = nlohmann::json::parse(ReadFile(r.dir + "/config.json"));
    config.erase("head_dim");
    config.update(edit);
    WriteFile(dir.file("config.json"), config.dump());
    std::filesystem::copy_file(r.dir + "/model.safetensors", dir.file("model.safetensors"));
    refused("weights = \"" + dir.path() + "\"\n", message);
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, double>>{
           {"factor", 0.0}, {"low_freq_factor", 4.0}, {"original_max_position_embeddings", -1}}) {
    TempDir dir;
    nlohmann::json config = nlohmann::json::parse(ReadFile(r.dir + "/config.json"));
    config.erase("rope_parameters");
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}};
    config["rope_scaling"][key] = value;
    WriteFile(dir.file("config.json"), config.dump());
    std::filesystem::copy_file(r.dir + "/model.safetensors", dir.file("model.safetensors"));
    refused("weights = \"" + dir.path() + "\"\n",
            "rope_scaling (llama3): factor, low_freq_factor, high_freq_factor and");
  }
}

TEST(TinyLm, ErrorsNameTheCulprit) {
  Reference r = LoadReference("llama_mha_tied");
  Status missing = TinyLmHarness::TryCreate("weights = \"/nonexistent/model\"\n");
  EXPECT_EQ(missing.code(), Code::kNotFound);
  EXPECT_NE(missing.message().find("weights directory '/nonexistent/model' not found"),
            std::string::npos)
      << missing.ToString();
  // An empty path is not the working directory: it names the key.
  Status empty = TinyLmHarness::TryCreate("weights = \"\"\n");
  EXPECT_EQ(empty.code(), Code::kInvalidArgument) << empty.ToString();
  EXPECT_NE(empty.message().find("weights: must not be empty (the weights directory)"),
            std::string::npos)
      << empty.ToString();
  Status no_key = TinyLmHarness::TryCreate("kv_label = \"kv\"\n");
  EXPECT_NE(no_key.message().find("missing required key 'weights'"), std::string::npos)
      << no_key.ToString();

  TinyLmHarness lm(ConfigFor(r));
  auto kv = MakeKv(r);
  LmRequest request(1, 0);
  TensorMapPtr view = kv->Plan({{1, 3, 0}});
  view->Remove("slot_mapping");
  Status status = lm.TryStep(*kv, {&request}, {{1, 2, 3}}, std::move(view));
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_NE(status.message().find("resource 'kv' view tensor 'slot_mapping' is missing"),
            std::string::npos)
      << status.ToString();

  LmRequest bad_token(2, 0);
  status = lm.TryStep(*kv, {&bad_token}, {{1, 999}}, kv->Plan({{2, 2, 0}}));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("input 'tokens' holds 999, outside [0, 96)"), std::string::npos)
      << status.ToString();

  LmRequest no_tokens(5, 0);
  status = lm.TryStep(*kv, {&no_tokens}, {{}}, kv->Plan({{5, 1, 0}}));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("input 'tokens' must be 1-D and not empty"), std::string::npos)
      << status.ToString();

  // A computed row's position outside its request's context (only the last is covered by the
  // context_lens check) would index past RoPE's table.
  LmRequest bad_position(4, 0);
  TensorMapPtr shifted = kv->Plan({{4, 3, 0}});
  static_cast<int64_t*>(shifted->Find("positions")->tensors[0]->dl.data)[0] = 1000;
  status = lm.TryStep(*kv, {&bad_position}, {{1, 2, 3}}, std::move(shifted));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("positions[0] is 1000, not 0"), std::string::npos)
      << status.ToString();
  // Inside the context but repeated ([0, 0, 2]): position 1's slot would stay unwritten while
  // the last token attends over it.
  LmRequest repeated(6, 0);
  TensorMapPtr doubled = kv->Plan({{6, 3, 0}});
  static_cast<int64_t*>(doubled->Find("positions")->tensors[0]->dl.data)[1] = 0;
  status = lm.TryStep(*kv, {&repeated}, {{1, 2, 3}}, std::move(doubled));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("positions[1] is 0, not 1"), std::string::npos)
      << status.ToString();

  // A token's K/V go only to the slot its page holds for its position: a slot of another
  // request's page (or any other) fails the step rather than overwriting that request's cache.
  LmRequest owner(7, 0), intruder(8, 0);
  TensorMapPtr crossed = kv->Plan({{7, 3, 0}, {8, 3, 0}});
  auto* slots = static_cast<int64_t*>(crossed->Find("slot_mapping")->tensors[0]->dl.data);
  slots[5] = slots[0];
  status = lm.TryStep(*kv, {&owner, &intruder}, {{1, 2, 3}, {1, 2, 3}}, std::move(crossed));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("request 8 (row 1 of the step): slot_mapping[5] is"),
            std::string::npos)
      << status.ToString();
  EXPECT_NE(status.message().find("not the slot block_table gives position 2"), std::string::npos)
      << status.ToString();

  // The context ends with the step's last token: a longer one would attend a slot never written.
  LmRequest longer(9, 0);
  TensorMapPtr past = kv->Plan({{9, 3, 0}});
  static_cast<int32_t*>(past->Find("context_lens")->tensors[0]->dl.data)[0] += 1;
  status = lm.TryStep(*kv, {&longer}, {{1, 2, 3}}, std::move(past));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("context_lens 4 is not its last position + 1 (3)"),
            std::string::npos)
      << status.ToString();

  // A context shorter than the step's tokens, with positions and slots that agree with it (from
  // -1 on) would index before RoPE's table and before its first page.
  LmRequest shorter(10, 0);
  TensorMapPtr early = kv->Plan({{10, 3, 0}});
  static_cast<int32_t*>(early->Find("context_lens")->tensors[0]->dl.data)[0] = 2;
  auto* early_positions = static_cast<int64_t*>(early->Find("positions")->tensors[0]->dl.data);
  auto* early_slots = static_cast<int64_t*>(early->Find("slot_mapping")->tensors[0]->dl.data);
  const int64_t first_slot = early_slots[0], second_slot = early_slots[1];
  for (int t = 0; t < 3; ++t) --early_positions[t];
  early_slots[0] = first_slot - 1;
  early_slots[1] = first_slot;
  early_slots[2] = second_slot;
  status = lm.TryStep(*kv, {&shorter}, {{1, 2, 3}}, std::move(early));
  EXPECT_EQ(status.code(), Code::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("request 10 (row 0 of the step): context_lens 2 is shorter "
                                  "than its 3 new tokens"),
            std::string::npos)
      << status.ToString();

  // A context past the model's positions names the request by its id and says which limit.
  LmRequest too_long(6, 0);
  TensorMapPtr long_view = kv->Plan({{6, 3, 0}});
  static_cast<int32_t*>(long_view->Find("context_lens")->tensors[0]->dl.data)[0] = 100000;
  status = lm.TryStep(*kv, {&too_long}, {{1, 2, 3}}, std::move(long_view));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("request 6 (row 0 of the step): its context of 100000 tokens "
                                  "exceeds the model's max_position_embeddings"),
            std::string::npos)
      << status.ToString();

  // Bad sampling parameters fail the request in prepare_inputs, before anything runs.
  for (const char* params : {"temperature = -1\n", "temperature = nan\n", "top_p = 0.0\n"}) {
    LmRequest bad_params(3, 0, params);
    status = lm.TryStep(*kv, {&bad_params}, {{1}}, kv->Plan({{3, 1, 0}}));
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << params;
    EXPECT_NE(status.message().find("sampling needs a finite temperature >= 0"), std::string::npos)
        << status.ToString();
  }
}

}  // namespace
}  // namespace mstar::test
