// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Reading model manifests: the parsed ModelSpec of a manifest that uses every feature, and one
// diagnostic (file:line:column: key: message) for each schema error. The cross-checks are in
// model_validate_test.cc; --set overrides and plugin checks below.
#include "model/model_manifest.h"

#include <gtest/gtest.h>

#include "config/config_tree.h"
#include "support/test_support.h"

namespace mstar {
namespace {

ModelParse Parse(const std::string& text) {
  return ParseModelManifestText(text, "m.toml");
}

// Passes when the parse failed and one diagnostic's ToString() contains text.
testing::AssertionResult Reports(const ModelParse& parse, const std::string& text) {
  if (parse.model.has_value()) return testing::AssertionFailure() << "the manifest was accepted";
  for (const Diagnostic& d : parse.diagnostics) {
    if (d.ToString().find(text) != std::string::npos) return testing::AssertionSuccess();
  }
  return testing::AssertionFailure() << "no diagnostic contains \"" << text << "\"; got:\n"
                                     << JoinDiagnostics(parse.diagnostics);
}

// Every feature of the format, each used once.
constexpr const char* kFull = R"(format = 1

[model]
name = "full"
description = "every feature"
prompt = "text"
max_output_tokens = 64

[nodes.enc]
plugin = "encoder"
device = "cuda:1"
resources = ["kv"]
[nodes.enc.config]
hidden = 8
names = ["x", "y"]

[nodes.lm]
plugin = "lm"
resources = ["kv"]
[nodes.head_a]
plugin = "head"
[nodes.head_b]
plugin = "head"
device = "cpu"
[nodes.codec]
plugin = "codec"

[resources.kv]
plugin = "paged_kv"
tiers = ["host", "disk"]
config = { pages = 128 }
device = "cuda:1"                 # its nodes disagree (enc on cuda:1, lm on cpu)

[tiers.host]
plugin = "host_tier"
[tiers.disk]
plugin = "disk_tier"
config = { dir = "/tmp/kv" }

[streams.audio]
to = "codec"
policy = "sliding_window"
window = 8
stride = 4
[streams.frames]
to = "video"
policy = "fixed"
size = 3

[partitions.main]
initial = "prefill"
transitions = { prefill = "decode" }
[partitions.codec]
initial = "vocode"
transitions = { vocode = "vocode" }
[partitions.video]
initial = "render"
transitions = { render = "done" }

[walks.prefill]
partition = "main"
run = { sequence = ["enc", "lm", { parallel = ["head_a", "head_b"] }] }
inputs = { "enc.text" = "request.text" }
edges = [
  { from = "enc.hidden", to = "lm.hidden" },
  { from = "lm.logits", to = "head_a.logits" },
  { from = "lm.logits", to = "head_b.logits" },
  { from = "head_a.token", persist = "last" },
  { from = "head_b.audio", stream = "audio" },
  { from = "head_a.token", emit = "tokens", modality = "tokens", counts_tokens = true },
]

[walks.decode]
partition = "main"
inputs = { "lm.token" = "persisted.last" }
edges = [
  { from = "lm.logits", to = "head_a.logits" },
  { from = "head_a.token", to = "lm.token" },
  { from = "head_a.token", emit = "token_ids" },
  { from = "head_a.frame", stream = "frames" },
]
[walks.decode.run]
loop = "generate"
max_iterations = 32
max_iterations_param = "max_tokens"
body = { sequence = ["lm", "head_a"] }

[walks.vocode]
partition = "codec"
run = "codec"
inputs = { "codec.chunk" = "stream.audio" }
edges = [{ from = "codec.wave", emit = "audio", modality = "audio", sample_rate = 16000 }]

[walks.render]
partition = "video"
run = "codec"
inputs = { "codec.chunk" = "stream.frames" }
)";

class FullManifest : public ::testing::Test {
 protected:
  void SetUp() override {
    parse_ = Parse(kFull);
    ASSERT_TRUE(parse_.model.has_value()) << JoinDiagnostics(parse_.diagnostics);
    ASSERT_TRUE(parse_.diagnostics.empty());
  }
  const ModelSpec& model() const { return *parse_.model; }

  ModelParse parse_;
};

TEST_F(FullManifest, ModelTable) {
  EXPECT_EQ(model().path, "m.toml");
  EXPECT_EQ(model().base_dir, "");
  EXPECT_EQ(model().name, "full");
  EXPECT_EQ(model().description, "every feature");
  EXPECT_EQ(model().controller, "");
  EXPECT_EQ(model().prompt, "text");
  EXPECT_EQ(model().max_output_tokens, 64u);
}

TEST_F(FullManifest, NodesResourcesAndTiers) {
  ASSERT_EQ(model().nodes.size(), 5u);
  const NodeSpec& enc = model().nodes.at("enc");
  EXPECT_EQ(enc.name, "enc");
  EXPECT_EQ(enc.plugin, "encoder");
  EXPECT_EQ(enc.device.device_type, kDLCUDA);
  EXPECT_EQ(enc.device.device_id, 1);
  EXPECT_EQ(enc.resources, std::vector<std::string>{"kv"});
  EXPECT_EQ(enc.where.line, 9u);
  EXPECT_EQ(model().nodes.at("head_b").device.device_type, kDLCPU);
  EXPECT_EQ(model().nodes.at("codec").device.device_type, kDLCPU);  // the default
  EXPECT_TRUE(model().nodes.at("codec").resources.empty());

  const ResourceSpec& kv = model().resources.at("kv");
  EXPECT_EQ(kv.plugin, "paged_kv");
  EXPECT_EQ(kv.tiers, (std::vector<std::string>{"host", "disk"}));  // nearest first
  EXPECT_TRUE(kv.explicit_device);
  EXPECT_EQ(kv.device.device_type, kDLCUDA);
  EXPECT_EQ(kv.device.device_id, 1);
  ASSERT_EQ(model().tiers.size(), 2u);
  EXPECT_EQ(model().tiers.at("disk").plugin, "disk_tier");
  EXPECT_EQ(model().tiers.at("disk").where.line, 36u);
}

// The runtime config's [device] places every node that names none, and the resources that go
// with them; a node or resource that names its device keeps it.
TEST(ModelManifest, NodesWithoutADeviceRunOnTheDefaultDevice) {
  ModelParse parse = ParseModelManifestText(kFull, "m.toml", {}, nullptr, DLDevice{kDLCUDA, 2});
  ASSERT_TRUE(parse.model) << JoinDiagnostics(parse.diagnostics);
  const ModelSpec& m = *parse.model;
  EXPECT_EQ(m.nodes.at("enc").device.device_id, 1);  // named: cuda:1
  EXPECT_TRUE(m.nodes.at("enc").explicit_device);
  EXPECT_EQ(m.nodes.at("head_b").device.device_type, kDLCPU);  // named: cpu
  for (const char* name : {"lm", "head_a", "codec"}) {
    const NodeSpec& node = m.nodes.at(name);
    EXPECT_FALSE(node.explicit_device) << name;
    EXPECT_EQ(node.device.device_type, kDLCUDA) << name;
    EXPECT_EQ(node.device.device_id, 2) << name;
  }
  EXPECT_EQ(m.resources.at("kv").device.device_id, 1);  // named

  // A resource that names no device goes with its nodes, on the default device.
  ModelParse followed = ParseModelManifestText(R"(format = 1
[model]
name = "m"
[nodes.lm]
plugin = "lm"
resources = ["kv"]
[resources.kv]
plugin = "paged_kv"
[partitions.main]
initial = "step"
transitions = { step = "done" }
[walks.step]
partition = "main"
run = "lm"
)",
                                               "m.toml", {}, nullptr, DLDevice{kDLCUDA, 3});
  ASSERT_TRUE(followed.model) << JoinDiagnostics(followed.diagnostics);
  EXPECT_EQ(followed.model->resources.at("kv").device.device_type, kDLCUDA);
  EXPECT_EQ(followed.model->resources.at("kv").device.device_id, 3);
}

TEST_F(FullManifest, ConfigTablesKeepTheirKeysAndPositions) {
  const mstar_config_t* hidden = ConfigLookup(model().nodes.at("enc").config->root(), "hidden");
  ASSERT_NE(hidden, nullptr);
  EXPECT_EQ(hidden->node->value<int64_t>(), 8);
  // A plugin's config errors name the file, line and full key.
  EXPECT_EQ(hidden->where, "m.toml:14:10: nodes.enc.config.hidden");
  const mstar_config_t* names = ConfigLookup(model().nodes.at("enc").config->root(), "names");
  ASSERT_NE(names, nullptr);
  EXPECT_EQ(names->children.size(), 2u);
  const mstar_config_t* pages = ConfigLookup(model().resources.at("kv").config->root(), "pages");
  ASSERT_NE(pages, nullptr);
  EXPECT_EQ(pages->where, "m.toml:31:20: resources.kv.config.pages");
  const mstar_config_t* dir = ConfigLookup(model().tiers.at("disk").config->root(), "dir");
  ASSERT_NE(dir, nullptr);
  EXPECT_EQ(dir->node->value<std::string>(), "/tmp/kv");
  // Without a config table: an empty one.
  EXPECT_TRUE(model().nodes.at("lm").config->table().empty());
}

TEST_F(FullManifest, StreamsAndChunkPolicies) {
  const StreamSpec& audio = model().streams.at("audio");
  EXPECT_EQ(audio.consumer, "codec");
  EXPECT_EQ(audio.policy.kind, ChunkPolicySpec::Kind::kSlidingWindow);
  EXPECT_EQ(audio.policy.window, 8u);
  EXPECT_EQ(audio.policy.stride, 4u);
  const StreamSpec& frames = model().streams.at("frames");
  EXPECT_EQ(frames.consumer, "video");
  EXPECT_EQ(frames.policy.kind, ChunkPolicySpec::Kind::kFixed);
  EXPECT_EQ(frames.policy.window, 3u);
  EXPECT_EQ(frames.policy.stride, 3u);  // fixed chunks do not overlap
}

TEST_F(FullManifest, PartitionsAndTransitions) {
  ASSERT_EQ(model().partitions.size(), 3u);
  const PartitionSpec& main = model().partitions.at("main");
  EXPECT_EQ(main.initial, "prefill");
  EXPECT_EQ(main.transitions, (std::map<std::string, std::string>{{"prefill", "decode"}}));
  EXPECT_EQ(main.stream, "");  // derived: no stream feeds it
  EXPECT_EQ(model().partitions.at("codec").stream, "audio");
  EXPECT_EQ(model().partitions.at("video").stream, "frames");
  EXPECT_EQ(model().partitions.at("video").transitions.at("render"), kDoneWalk);
}

TEST_F(FullManifest, SequenceWithParallelGroup) {
  const WalkSpec& prefill = model().walks.at("prefill");
  EXPECT_EQ(prefill.partition, "main");
  const SectionSpec& run = prefill.run;
  ASSERT_EQ(run.kind, SectionSpec::Kind::kSequence);
  ASSERT_EQ(run.children.size(), 3u);
  EXPECT_EQ(run.children[0].kind, SectionSpec::Kind::kNode);
  EXPECT_EQ(run.children[0].node, "enc");
  EXPECT_EQ(run.children[1].node, "lm");
  const SectionSpec& group = run.children[2];
  ASSERT_EQ(group.kind, SectionSpec::Kind::kParallel);
  ASSERT_EQ(group.children.size(), 2u);
  EXPECT_EQ(group.children[1].node, "head_b");
  EXPECT_EQ(run.where.line, 62u);
  EXPECT_EQ(run.where.column, 7u);
}

TEST_F(FullManifest, LoopWithMaxIterationsParam) {
  const SectionSpec& run = model().walks.at("decode").run;
  ASSERT_EQ(run.kind, SectionSpec::Kind::kLoop);
  EXPECT_EQ(run.loop, "generate");
  EXPECT_EQ(run.max_iterations, 32u);
  EXPECT_EQ(run.max_iterations_param, "max_tokens");
  ASSERT_EQ(run.children.size(), 1u);  // the body
  ASSERT_EQ(run.children[0].kind, SectionSpec::Kind::kSequence);
  EXPECT_EQ(run.children[0].children[1].node, "head_a");
}

TEST_F(FullManifest, WalkInputsOfEverySource) {
  const WalkInputSpec& request = model().walks.at("prefill").inputs.at(0);
  EXPECT_EQ(request.node, "enc");
  EXPECT_EQ(request.input, "text");
  EXPECT_EQ(request.source, WalkInputSpec::Source::kRequest);
  EXPECT_EQ(request.name, "text");
  EXPECT_EQ(request.where.line, 63u);
  const WalkInputSpec& persisted = model().walks.at("decode").inputs.at(0);
  EXPECT_EQ(persisted.source, WalkInputSpec::Source::kPersisted);
  EXPECT_EQ(persisted.name, "last");
  const WalkInputSpec& stream = model().walks.at("vocode").inputs.at(0);
  EXPECT_EQ(stream.node, "codec");
  EXPECT_EQ(stream.input, "chunk");
  EXPECT_EQ(stream.source, WalkInputSpec::Source::kStream);
  EXPECT_EQ(stream.name, "audio");
}

TEST_F(FullManifest, EdgesOfEveryKind) {
  const std::vector<EdgeSpec>& edges = model().walks.at("prefill").edges;
  ASSERT_EQ(edges.size(), 6u);
  EXPECT_EQ(edges[0].kind, EdgeSpec::Kind::kNode);
  EXPECT_EQ(edges[0].from_node, "enc");
  EXPECT_EQ(edges[0].from_output, "hidden");
  EXPECT_EQ(edges[0].to_node, "lm");
  EXPECT_EQ(edges[0].to_input, "hidden");
  EXPECT_EQ(edges[0].modality, "");
  EXPECT_EQ(edges[0].where.line, 65u);
  EXPECT_EQ(edges[3].kind, EdgeSpec::Kind::kPersist);
  EXPECT_EQ(edges[3].name, "last");
  EXPECT_EQ(edges[4].kind, EdgeSpec::Kind::kStream);
  EXPECT_EQ(edges[4].name, "audio");
  EXPECT_EQ(edges[5].kind, EdgeSpec::Kind::kEmit);
  EXPECT_EQ(edges[5].name, "tokens");
  EXPECT_EQ(edges[5].modality, "tokens");
  EXPECT_TRUE(edges[5].counts_tokens);
  const EdgeSpec& plain_emit = model().walks.at("decode").edges.at(2);
  EXPECT_EQ(plain_emit.modality, "raw");  // the default modality
  EXPECT_FALSE(plain_emit.counts_tokens);
  EXPECT_EQ(plain_emit.sample_rate, 0u);  // none declared
  EXPECT_EQ(model().walks.at("vocode").edges.at(0).sample_rate, 16000u);
}

TEST(ModelManifest, ShippedEchoManifestIsValid) {
  ModelParse parse =
      ParseModelManifestFile(std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml");
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  EXPECT_EQ(parse.model->name, "echo");
  EXPECT_EQ(parse.model->base_dir, std::string(MSTAR_SOURCE_DIR) + "/manifests/models");
  EXPECT_EQ(parse.model->prompt, "prompt");  // the default
  EXPECT_EQ(parse.model->partitions.at("chunks").stream, "tokens");
}

// --- --set overrides ----------------------------------------------------------------------------

const std::string& EchoPath() {
  static const std::string path = std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml";
  return path;
}

ModelParse Echo(const std::vector<std::string>& overrides,
                const PluginRegistry* registry = nullptr) {
  return ParseModelManifestFile(EchoPath(), overrides, registry);
}

TEST(ModelOverrides, NumbersBooleansArraysAndStrings) {
  ModelParse parse =
      Echo({"model.max_output_tokens=17", "streams.tokens.window=6", "nodes.echo.config.flag=true",
            "nodes.echo.config.rate=0.5", "nodes.echo.resources=[\"kv\"]",
            "resources.kv.plugin=paged_kv", "model.description=\"a = b\"",
            "nodes.chunker.plugin=other", "nodes.chunker.device=cuda:1"});
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  const ModelSpec& model = *parse.model;
  EXPECT_EQ(model.max_output_tokens, 17u);
  EXPECT_EQ(model.streams.at("tokens").policy.window, 6u);
  EXPECT_EQ(model.streams.at("tokens").policy.stride, 2u);  // untouched
  const toml::table& config = model.nodes.at("echo").config->table();
  EXPECT_EQ(config["flag"].value<bool>(), true);
  EXPECT_EQ(config["rate"].value<double>(), 0.5);
  EXPECT_EQ(config["end_token"].value<int64_t>(), 0);  // the file's value is kept
  EXPECT_EQ(model.nodes.at("echo").resources, std::vector<std::string>{"kv"});
  EXPECT_EQ(model.resources.at("kv").plugin, "paged_kv");  // [resources] created
  EXPECT_EQ(model.description, "a = b");                   // quoted: the string inside
  EXPECT_EQ(model.nodes.at("chunker").plugin, "other");    // bare string
  EXPECT_EQ(model.nodes.at("chunker").device.device_type, kDLCUDA);
  EXPECT_EQ(model.nodes.at("chunker").device.device_id, 1);
}

TEST(ModelOverrides, QuotedKeySegmentsHoldDots) {
  ModelParse parse = Echo({"walks.decode.inputs.\"echo.tokens\"=request.prompt"});
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  const std::vector<WalkInputSpec>& inputs = parse.model->walks.at("decode").inputs;
  ASSERT_EQ(inputs.size(), 1u);  // replaced, not added
  EXPECT_EQ(inputs[0].node, "echo");
  EXPECT_EQ(inputs[0].input, "tokens");
  EXPECT_EQ(inputs[0].source, WalkInputSpec::Source::kRequest);

  // The value is checked like the file's, and located at --set.
  EXPECT_TRUE(
      Reports(Echo({"walks.decode.inputs.\"echo.tokens\"=persisted.x"}),
              "--set: walks.decode.inputs: input never produced: no walk has an edge { persist = "
              "\"x\" }"));
  EXPECT_TRUE(Reports(Echo({"nodes.echo.resources=[\"nokv\"]"}),
                      "--set: nodes.echo.resources: unknown resource 'nokv'"));
}

// Blanks around the '=' and the dots are ignored, as in a TOML file; a blank inside a name is
// refused, not made into a key that differs from the one meant only by a space.
TEST(ModelOverrides, BlanksAroundTheKeyAndValueAreIgnored) {
  ModelParse parse = Echo({"model.max_output_tokens = 17", " nodes . echo.config.rate=\t0.5 ",
                           "nodes.echo.config.\"two words\" = on", "model.description = a b "});
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  EXPECT_EQ(parse.model->max_output_tokens, 17u);
  const toml::table& config = parse.model->nodes.at("echo").config->table();
  EXPECT_EQ(config["rate"].value<double>(), 0.5);
  EXPECT_EQ(config["two words"].value<std::string>(), "on");
  EXPECT_EQ(parse.model->description, "a b");  // a bare string, trimmed
  for (const char* text : {"model.max output_tokens=1", "\"model\" x.y=1", "\"\" x.y=1"}) {
    EXPECT_TRUE(Reports(Echo({text}), std::string("--set: ") + text + ": malformed key")) << text;
  }
}

TEST(ModelOverrides, CreatesMissingTables) {
  ModelParse parse = Echo({"tiers.host.plugin=host_tier", "tiers.host.config.bytes=1024"});
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  ASSERT_EQ(parse.model->tiers.count("host"), 1u);
  EXPECT_EQ(parse.model->tiers.at("host").plugin, "host_tier");
  EXPECT_EQ(parse.model->tiers.at("host").config->table()["bytes"].value<int64_t>(), 1024);
  EXPECT_EQ(parse.model->tiers.at("host").where.path, "--set");
}

TEST(ModelOverrides, MalformedOverrides) {
  ModelParse parse =
      Echo({"noequals", "a..b=1", ".a=1", "a.=1", "a.\"b=1", "model.name.x=1", "=1"});
  EXPECT_TRUE(Reports(parse, "--set: noequals: expected key=value"));
  EXPECT_TRUE(Reports(parse,
                      "--set: a..b=1: malformed key (dotted names; quote a segment that "
                      "contains dots or blanks)"));
  EXPECT_TRUE(Reports(parse, "--set: .a=1: malformed key"));
  EXPECT_TRUE(Reports(parse, "--set: a.=1: malformed key"));
  EXPECT_TRUE(Reports(parse, "--set: a.\"b=1: malformed key"));
  EXPECT_TRUE(Reports(parse, "--set: =1: malformed key"));
  EXPECT_TRUE(Reports(parse, "--set: model.name.x=1: a key on the way is not a table"));
  EXPECT_EQ(parse.diagnostics.size(), 7u) << JoinDiagnostics(parse.diagnostics);
}

// A value is one TOML value: a second line with another key is refused, not dropped; text meant
// as a TOML value (an array, an inline table, a quoted string, an integer) that is not a valid one
// is refused with TOML's reason, not taken as a bare string and reported as the wrong type.
TEST(ModelOverrides, AValueThatIsNotOneValidTomlValueIsRefused) {
  ModelParse parse =
      Echo({"model.max_output_tokens=5\nbogus_key = 1", "model.description=\"unterminated",
            "nodes.echo.resources=[kv]", "model.max_output_tokens=99999999999999999999"});
  EXPECT_TRUE(Reports(parse,
                      "--set: model.max_output_tokens=5\nbogus_key = 1: the value is more than "
                      "one TOML value (a line break?)"));
  EXPECT_TRUE(Reports(parse, "--set: model.description=\"unterminated: not a valid TOML value: "));
  EXPECT_TRUE(Reports(parse, "--set: nodes.echo.resources=[kv]: not a valid TOML value: "));
  EXPECT_TRUE(Reports(parse,
                      "--set: model.max_output_tokens=99999999999999999999: not a valid TOML "
                      "value: "));
  EXPECT_EQ(parse.diagnostics.size(), 4u) << JoinDiagnostics(parse.diagnostics);
  // Text that is not TOML and not meant as a value is a bare string, as before.
  ModelParse bare = Echo({"model.description=1.2.3 beta", "nodes.echo.config.path=8bit/model"});
  ASSERT_TRUE(bare.model.has_value()) << JoinDiagnostics(bare.diagnostics);
  EXPECT_EQ(bare.model->description, "1.2.3 beta");
}

// An override nests no deeper than a manifest may (128 levels), in its key or in its value: a key
// of 60000 segments or a value of 60000 nested tables is refused, not built into a tree whose
// recursive walks would overflow the stack.
TEST(ModelOverrides, OverridesNestingTooDeepAreRefused) {
  std::string deep_key = "nodes.echo.config";
  for (int i = 0; i < 60000; ++i) deep_key += ".a";
  std::string deep_value = "x=";
  for (int i = 0; i < 60000; ++i) deep_value += "{a=";
  deep_value += "1";
  for (int i = 0; i < 60000; ++i) deep_value += "}";
  // A segment holding a character that starts a TOML comment or literal string hides the rest
  // of the key from a TOML scan, not from the split.
  std::string commented = "nodes.echo.config.#", quoted = "nodes.echo.config.'";
  for (int i = 0; i < 60000; ++i) {
    commented += ".a";
    quoted += ".a";
  }
  ModelParse parse = Echo({deep_key + "=1", deep_value, commented + "=1", quoted + "=1"});
  ASSERT_FALSE(parse.model.has_value());
  ASSERT_EQ(parse.diagnostics.size(), 4u) << parse.diagnostics.size();
  for (const Diagnostic& d : parse.diagnostics)
    EXPECT_NE(d.message.find("nest more than 128 levels deep"), std::string::npos) << d.message;
  const std::string fine = "nodes.echo.config.a.b.c=1";
  EXPECT_TRUE(Echo({fine}).model.has_value());
}

TEST(ModelOverrides, DiagnosticsAboutOverriddenValuesSaySet) {
  EXPECT_TRUE(Reports(Echo({"model.max_output_tokens=0"}),
                      "--set: model.max_output_tokens: must be at least 1"));
  EXPECT_TRUE(Reports(Echo({"model.max_output_tokens=true"}),
                      "--set: model.max_output_tokens: expected an integer, found boolean"));
  EXPECT_TRUE(Reports(Echo({"model.max_output_tokens=[1, 2]"}),
                      "--set: model.max_output_tokens: expected an integer, found array"));
  EXPECT_TRUE(Reports(Echo({"model.bogus=1"}), "--set: model.bogus: unknown key"));
  EXPECT_TRUE(Reports(Echo({"nodes.echo.device=tpu"}),
                      "--set: nodes.echo.device: expected \"cpu\", \"cuda\" or \"cuda:N\""));
  // The host is one device: "cpu:1" would be a second host budget.
  EXPECT_TRUE(Reports(Echo({"nodes.echo.device=\"cpu:1\""}),
                      "--set: nodes.echo.device: expected \"cpu\", \"cuda\" or \"cuda:N\""));
  EXPECT_TRUE(Echo({"nodes.echo.device=\"cpu:0\""}).model.has_value());
  // A device index past int's range (found by fuzzing: it threw out of the parser).
  EXPECT_TRUE(Reports(Echo({"nodes.echo.device=\"cuda:99999999999999999999\""}),
                      "--set: nodes.echo.device: expected \"cpu\", \"cuda\" or \"cuda:N\""));
  EXPECT_TRUE(Reports(Echo({"walks.prefill.run=nope"}),
                      "--set: walks.prefill.run: unknown node 'nope' (no [nodes.nope])"));
  // A value the override did not touch keeps its place in the file.
  EXPECT_TRUE(Reports(Echo({"streams.tokens.window=1"}),
                      "echo.toml:24:10: streams.tokens.stride: must not exceed window"));
}

// --- Plugin checks against a real registry ------------------------------------------------------

class ModelPlugins : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = new PluginRegistry(test::LoadOnly({MSTAR_BUILD_DIR "/lib/mstar/plugins"}));
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
  }
  static PluginRegistry* registry_;
};
PluginRegistry* ModelPlugins::registry_ = nullptr;

TEST_F(ModelPlugins, ShippedEchoManifestFindsItsPlugins) {
  ModelParse parse = Echo({}, registry_);
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
}

TEST_F(ModelPlugins, UnknownSubmodulePlugin) {
  ModelParse parse = Echo({"nodes.chunker.plugin=nope"}, registry_);
  EXPECT_TRUE(Reports(parse,
                      "echo.toml:17:1: nodes.chunker.plugin: unknown plugin: no plugin "
                      "provides submodule 'nope' (available: echo, echo_chunk"));
  EXPECT_EQ(parse.diagnostics.size(), 1u) << JoinDiagnostics(parse.diagnostics);
}

TEST_F(ModelPlugins, ResourceNamedLikeASubmodule) {
  ModelParse parse =
      Echo({"nodes.echo.resources=[\"kv\"]", "resources.kv.plugin=echo", "tiers.t.plugin=echo",
            "resources.kv.tiers=[\"t\"]", "model.controller=echo"},
           registry_);
  EXPECT_TRUE(Reports(parse,
                      "--set: resources.kv.plugin: unknown plugin: no plugin provides "
                      "resource 'echo' (available: "));
  EXPECT_TRUE(Reports(parse,
                      "--set: tiers.t.plugin: unknown plugin: no plugin provides tier "
                      "'echo' (available: "));
  EXPECT_TRUE(Reports(parse, "model.controller: unknown plugin: no plugin provides model 'echo'"));
  EXPECT_EQ(parse.diagnostics.size(), 3u) << JoinDiagnostics(parse.diagnostics);
}

TEST_F(ModelPlugins, PluginsAreCheckedOnlyWhenARegistryIsGiven) {
  EXPECT_TRUE(Echo({"nodes.chunker.plugin=nope"}).model.has_value());
}

}  // namespace
}  // namespace mstar
