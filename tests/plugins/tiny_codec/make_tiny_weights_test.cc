// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// make-tiny-weights, run as a program: standard safetensors files (header, alignment, offsets,
// sizes), the Hugging Face Llama tensor names and config, the same bytes on every run, and the
// refuse-unless---force rule for files with other contents.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "plugins/tiny_codec/tiny_weights.h"

namespace mstar::test {
namespace {

struct Parsed {
  nlohmann::json header;
  uint64_t header_len = 0;
  uint64_t data_size = 0;
  std::string bytes;
};

Parsed ParseSafetensors(const std::string& path) {
  Parsed p;
  p.bytes = ReadFile(path);
  EXPECT_GE(p.bytes.size(), 8u);
  for (int i = 0; i < 8; ++i)
    p.header_len |= static_cast<uint64_t>(static_cast<unsigned char>(p.bytes[i])) << (8 * i);
  EXPECT_LE(p.header_len, p.bytes.size() - 8);
  p.header = nlohmann::json::parse(p.bytes.substr(8, p.header_len));
  p.data_size = p.bytes.size() - 8 - p.header_len;
  return p;
}

// Every tensor is F32 with offsets that tile the data section exactly; returns name -> shape.
std::map<std::string, std::vector<int64_t>> CheckLayout(const Parsed& p) {
  EXPECT_EQ((8 + p.header_len) % 8, 0u) << "the data section starts 8-byte aligned";
  EXPECT_EQ(p.header["__metadata__"]["format"], "pt");
  std::map<uint64_t, uint64_t> ranges;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, entry] : p.header.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(entry["dtype"], "F32") << name;
    std::vector<int64_t> shape = entry["shape"].get<std::vector<int64_t>>();
    uint64_t count = 1;
    for (int64_t d : shape) count *= static_cast<uint64_t>(d);
    uint64_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
    EXPECT_EQ(end - begin, count * 4) << name;
    ranges[begin] = end;
    shapes[name] = shape;
  }
  uint64_t at = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, at) << "tensors are contiguous and do not overlap";
    at = end;
  }
  EXPECT_EQ(at, p.data_size) << "the tensors fill the data section";
  return shapes;
}

std::vector<float> Floats(const Parsed& p, const std::string& name) {
  uint64_t begin = p.header[name]["data_offsets"][0], end = p.header[name]["data_offsets"][1];
  std::vector<float> out((end - begin) / 4);
  std::memcpy(out.data(), p.bytes.data() + 8 + p.header_len + begin, end - begin);
  return out;
}

// The language model's dimensions in a config.json.
struct LmDims {
  int hidden, intermediate, layers, heads, kv_heads, head_dim;
};
void ExpectDims(const nlohmann::json& config, const LmDims& d) {
  EXPECT_EQ(config["hidden_size"], d.hidden);
  EXPECT_EQ(config["intermediate_size"], d.intermediate);
  EXPECT_EQ(config["num_hidden_layers"], d.layers);
  EXPECT_EQ(config["num_attention_heads"], d.heads);
  EXPECT_EQ(config["num_key_value_heads"], d.kv_heads);
  EXPECT_EQ(config["head_dim"], d.head_dim);
}

TEST(MakeTinyWeights, LmIsAHuggingFaceLlamaCheckpoint) {
  std::string dir = TinyWeightsDir() + "/tiny-lm";
  nlohmann::json config = nlohmann::json::parse(ReadFile(dir + "/config.json"));
  EXPECT_EQ(config["model_type"], "llama");
  ExpectDims(config, {64, 128, 2, 4, 2, 16});
  EXPECT_EQ(config["vocab_size"], 256 + 1024 + 4);
  EXPECT_EQ(config["tie_word_embeddings"], false);
  EXPECT_EQ(config["max_position_embeddings"], 2048);
  EXPECT_EQ(config["end_of_audio_token_id"], 1282);

  Parsed p = ParseSafetensors(dir + "/model.safetensors");
  std::map<std::string, std::vector<int64_t>> shapes = CheckLayout(p);
  std::map<std::string, std::vector<int64_t>> expected = {{"model.embed_tokens.weight", {1284, 64}},
                                                          {"model.norm.weight", {64}},
                                                          {"lm_head.weight", {1284, 64}}};
  for (int i = 0; i < 2; ++i) {
    std::string l = "model.layers." + std::to_string(i) + ".";
    expected[l + "self_attn.q_proj.weight"] = {64, 64};
    expected[l + "self_attn.k_proj.weight"] = {32, 64};
    expected[l + "self_attn.v_proj.weight"] = {32, 64};
    expected[l + "self_attn.o_proj.weight"] = {64, 64};
    expected[l + "mlp.gate_proj.weight"] = {128, 64};
    expected[l + "mlp.up_proj.weight"] = {128, 64};
    expected[l + "mlp.down_proj.weight"] = {64, 128};
    expected[l + "input_layernorm.weight"] = {64};
    expected[l + "post_attention_layernorm.weight"] = {64};
  }
  EXPECT_EQ(shapes, expected);
  for (float v : Floats(p, "model.layers.1.input_layernorm.weight")) EXPECT_EQ(v, 1.0f);
  std::vector<float> q = Floats(p, "model.layers.0.self_attn.q_proj.weight");
  std::set<float> distinct(q.begin(), q.end());
  EXPECT_GT(distinct.size(), q.size() / 2) << "random weights, not a constant";
  for (float v : q) EXPECT_LE(std::abs(v), std::sqrt(3.0f / 64.0f));
}

TEST(MakeTinyWeights, CodecTensorsMatchItsConfig) {
  std::string dir = TinyWeightsDir() + "/tiny-codec";
  nlohmann::json config = nlohmann::json::parse(ReadFile(dir + "/config.json"));
  EXPECT_EQ(config["sample_rate"], 24000);
  EXPECT_EQ(config["samples_per_token"], 320);
  int64_t product = 1;
  for (int64_t r : config["upsample_rates"]) product *= r;
  EXPECT_EQ(product, 320);
  std::map<std::string, std::vector<int64_t>> shapes =
      CheckLayout(ParseSafetensors(dir + "/model.safetensors"));
  EXPECT_EQ(shapes["embed.weight"], (std::vector<int64_t>{1024, 64}));
  EXPECT_EQ(shapes["blocks.1.conv.weight"], (std::vector<int64_t>{64, 64, 3}));
  EXPECT_EQ(shapes["ups.0.weight"], (std::vector<int64_t>{64, 32, 16}));
  EXPECT_EQ(shapes["ups.2.weight"], (std::vector<int64_t>{16, 8, 9}));
  EXPECT_EQ(shapes["out.weight"], (std::vector<int64_t>{1, 8, 7}));
  EXPECT_EQ(shapes.size(), 1u + 2u * 2u + 3u * 2u + 2u);  // embed, blocks, ups, out
}

TEST(MakeTinyWeights, SameBytesEveryRun) {
  TempDir other;
  CommandResult r = RunMakeTinyWeights(ShellQuoted(other.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file : {"tiny-lm/config.json", "tiny-lm/model.safetensors",
                           "tiny-codec/config.json", "tiny-codec/model.safetensors"}) {
    EXPECT_EQ(ReadFile(other.file(file)), ReadFile(TinyWeightsDir() + "/" + file)) << file;
    EXPECT_NE(r.out.find(std::string("wrote ") + other.file(file)), std::string::npos) << r.out;
  }
}

TEST(MakeTinyWeights, RerunLeavesFilesAndRefusesToOverwriteOthersWithoutForce) {
  TempDir dir;
  ASSERT_EQ(RunMakeTinyWeights(ShellQuoted(dir.path())).exit_code, 0);
  CommandResult again = RunMakeTinyWeights(ShellQuoted(dir.path()));
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.out.find("unchanged " + dir.file("tiny-codec/model.safetensors")),
            std::string::npos)
      << again.out;

  std::string original = ReadFile(dir.file("tiny-lm/config.json"));
  WriteFile(dir.file("tiny-lm/config.json"), "{}");
  CommandResult refused = RunMakeTinyWeights(ShellQuoted(dir.path()));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(dir.file("tiny-lm/config.json") + " exists with other contents"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(ReadFile(dir.file("tiny-lm/config.json")), "{}");

  CommandResult forced = RunMakeTinyWeights("--force '" + dir.path() + "'");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(ReadFile(dir.file("tiny-lm/config.json")), original);
  EXPECT_FALSE(std::filesystem::exists(dir.file("tiny-lm/config.json.tmp")));
}

TEST(MakeTinyWeights, UsageErrors) {
  EXPECT_EQ(RunMakeTinyWeights("").exit_code, 2);
  CommandResult r = RunMakeTinyWeights("--bogus x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option --bogus"), std::string::npos) << r.err;
  TempDir dir;
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--lm-layers 0", "needs a positive integer, got '0'"},
           {"--lm-hidden 12x", "needs a positive integer, got '12x'"},
           {"--lm-heads", "needs a value"},
           {"--lm-hidden 100 --lm-heads 8", "multiple of the head count"},
           {"--lm-heads 6 --lm-kv-heads 4 --lm-hidden 96", "multiple of the KV head count"}}) {
    SCOPED_TRACE(args);
    bool trailing = args == "--lm-heads";
    CommandResult bad = RunMakeTinyWeights(trailing ? ShellQuoted(dir.path()) + " " + args
                                                    : args + " " + ShellQuoted(dir.path()));
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find(message), std::string::npos) << bad.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("tiny-lm"))) << "nothing written on a usage error";
}

TEST(MakeTinyWeights, LmDimensionsComeFromTheOptions) {
  TempDir dir;
  CommandResult r = RunMakeTinyWeights(
      "--lm-layers 3 --lm-hidden 96 --lm-heads 6 --lm-kv-heads 3 --lm-intermediate 160 '" +
      dir.path() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectDims(nlohmann::json::parse(ReadFile(dir.file("tiny-lm/config.json"))),
             {96, 160, 3, 6, 3, 16});
  std::map<std::string, std::vector<int64_t>> shapes =
      CheckLayout(ParseSafetensors(dir.file("tiny-lm/model.safetensors")));
  EXPECT_EQ(shapes.size(), 3u + 3u * 9u);
  EXPECT_EQ(shapes["model.layers.2.self_attn.k_proj.weight"], (std::vector<int64_t>{48, 96}));
  EXPECT_EQ(shapes["model.layers.2.mlp.down_proj.weight"], (std::vector<int64_t>{96, 160}));
  EXPECT_EQ(shapes["lm_head.weight"], (std::vector<int64_t>{1284, 96}));
}

}  // namespace
}  // namespace mstar::test
