// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Schema errors of model manifests: one diagnostic (file:line:column: key: message) for each.
#include <gtest/gtest.h>

#include "model/model_manifest.h"

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

constexpr const char* kHead = "format = 1\n[model]\nname = \"m\"\n";  // lines 1-3

TEST(ModelManifestSchema, SyntaxErrorHasLineAndColumn) {
  ModelParse parse = Parse("format = 1\n[model]\nname = \"m\n");
  ASSERT_EQ(parse.diagnostics.size(), 1u);
  EXPECT_EQ(parse.diagnostics[0].where.line, 3u);
  EXPECT_GT(parse.diagnostics[0].where.column, 0u);
  EXPECT_TRUE(Reports(parse, "m.toml:3:")) << parse.diagnostics[0].ToString();
  EXPECT_TRUE(Reports(parse, "TOML syntax error: "));
}

TEST(ModelManifestSchema, WrongFormat) {
  EXPECT_TRUE(Reports(Parse("format = 2\n[model]\nname = \"m\"\n"),
                      "m.toml:1:10: format: unsupported model manifest format 2; this runtime "
                      "reads format 1"));
  EXPECT_TRUE(Reports(Parse("format = \"1\"\n[model]\nname = \"m\"\n"),
                      "m.toml:1:10: format: expected an integer, found string"));
}

TEST(ModelManifestSchema, MissingRequiredKeys) {
  ModelParse empty = Parse("");
  EXPECT_TRUE(Reports(empty, "format: missing required key (expected in the top level)"));
  EXPECT_TRUE(Reports(empty, "model: missing required key (expected in the top level)"));
  EXPECT_TRUE(Reports(Parse("format = 1\n[model]\nprompt = \"p\"\n"),
                      "m.toml:2:1: model.name: missing required key (expected in [model])"));
  ModelParse parts = Parse(std::string(kHead) +
                           "[nodes.a]\n[resources.r]\n[tiers.t]\n[streams.s]\n[walks.w]\n"
                           "[partitions.p]\n");
  EXPECT_TRUE(Reports(parts,
                      "m.toml:4:1: nodes.a.plugin: missing required key (expected in "
                      "[nodes.a])"));
  EXPECT_TRUE(Reports(parts, "m.toml:5:1: resources.r.plugin: missing required key"));
  EXPECT_TRUE(Reports(parts, "m.toml:6:1: tiers.t.plugin: missing required key"));
  EXPECT_TRUE(Reports(parts, "m.toml:7:1: streams.s.to: missing required key"));
  EXPECT_TRUE(Reports(parts, "m.toml:7:1: streams.s.policy: missing required key"));
  EXPECT_TRUE(Reports(parts, "m.toml:8:1: walks.w.partition: missing required key"));
  EXPECT_TRUE(Reports(parts,
                      "m.toml:8:1: walks.w.run: missing required key (the walk's "
                      "program: a node name or a section)"));
  EXPECT_TRUE(Reports(parts, "m.toml:9:1: partitions.p.initial: missing required key"));
  ModelParse policy = Parse(std::string(kHead) +
                            "[streams.s]\nto = \"p\"\npolicy = \"sliding_window\"\n"
                            "[streams.f]\nto = \"p\"\npolicy = \"fixed\"\n");
  EXPECT_TRUE(Reports(policy, "m.toml:4:1: streams.s.window: missing required key"));
  EXPECT_TRUE(Reports(policy, "m.toml:4:1: streams.s.stride: missing required key"));
  EXPECT_TRUE(Reports(policy, "m.toml:7:1: streams.f.size: missing required key"));
}

TEST(ModelManifestSchema, UnknownKeysAtEveryLevel) {
  ModelParse parse = Parse(R"(format = 1
colour = "blue"
[model]
name = "m"
nmae = "typo"
[nodes.a]
plugin = "p"
plugn = "p"
[walks.w]
partition = "main"
run = { sequence = ["a"], body = "a" }
edges = [{ from = "a.x", emit = "out", weight = 2 }]
[partitions.main]
initial = "w"
final = "w"
)");
  EXPECT_TRUE(Reports(parse, "m.toml:2:10: colour: unknown key"));
  EXPECT_TRUE(Reports(parse, "m.toml:5:8: model.nmae: unknown key"));
  EXPECT_TRUE(Reports(parse, "m.toml:8:9: nodes.a.plugn: unknown key"));
  EXPECT_TRUE(Reports(parse, "m.toml:11:34: walks.w.run.body: unknown key"));
  EXPECT_TRUE(Reports(parse, "m.toml:12:49: walks.w.edges[0].weight: unknown key"));
  EXPECT_TRUE(Reports(parse, "m.toml:15:9: partitions.main.final: unknown key"));
  EXPECT_EQ(parse.diagnostics.size(), 6u) << JoinDiagnostics(parse.diagnostics);
}

TEST(ModelManifestSchema, IllTypedValues) {
  ModelParse parse = Parse(R"(format = 1
nodes = { a = { plugin = 7, resources = "kv" }, b = { plugin = "p", resources = [1] }, c = 3 }
[model]
name = "m"
max_output_tokens = "many"
[walks.w]
partition = "main"
run = 5
inputs = { "a.x" = 5 }
edges = ["a.x"]
[partitions.main]
initial = "w"
transitions = { w = 1 }
)");
  EXPECT_TRUE(Reports(parse, "m.toml:2:26: nodes.a.plugin: expected a string, found integer"));
  EXPECT_TRUE(Reports(parse, "m.toml:2:41: nodes.a.resources: expected an array, found string"));
  EXPECT_TRUE(Reports(parse, "m.toml:2:82: nodes.b.resources[0]: expected a name (string)"));
  EXPECT_TRUE(Reports(parse, "m.toml:2:92: nodes.c: expected a table, found integer"));
  EXPECT_TRUE(
      Reports(parse, "m.toml:5:21: model.max_output_tokens: expected an integer, found string"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:8:7: walks.w.run: expected a node name or a table with "
                      "sequence, parallel or loop"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:9:20: walks.w.inputs.\"a.x\": expected \"request.NAME\", "
                      "\"persisted.NAME\", \"stream.NAME\" or \"controller.NAME\""));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:10:10: walks.w.edges[0]: expected a table { from = "
                      "\"node.output\", to | persist | stream | emit = ... }"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:13:21: partitions.main.transitions.w: expected the next "
                      "walk's name or \"done\""));
  EXPECT_TRUE(Reports(Parse("format = 1\nnodes = 5\n[model]\nname = \"m\"\n"),
                      "m.toml:2:9: nodes: expected a table, found integer"));
  EXPECT_TRUE(Reports(Parse("format = 1\n[model]\nname = \"m\"\nmax_output_tokens = 0\n"),
                      "m.toml:4:21: model.max_output_tokens: must be at least 1"));
  EXPECT_TRUE(Reports(Parse(std::string(kHead) + "[nodes.\"a b\"]\nplugin = \"p\"\n"),
                      "m.toml:4:1: nodes.a b: names use letters, digits, '_' and '-' and start "
                      "with a letter or '_'"));
}

TEST(ModelManifestSchema, BadSectionShapes) {
  ModelParse parse = Parse(std::string(kHead) + R"([walks.two]
partition = "p"
run = { sequence = ["a"], parallel = ["b"] }
[walks.nobody]
partition = "p"
run = { loop = "l", max_iterations = 4 }
[walks.zero]
partition = "p"
run = { sequence = ["a", { loop = "l", max_iterations = 0, body = "a" }] }
[walks.empty]
partition = "p"
run = { parallel = [] }
[walks.badname]
partition = "p"
run = { loop = "no way", max_iterations = 1, body = "a" }
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:6:7: walks.two.run: a section has exactly one of sequence, "
                      "parallel or loop"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:9:7: walks.nobody.run.body: missing required key (the "
                      "loop's body section)"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:12:57: walks.zero.run.sequence[1].max_iterations: must be "
                      "at least 1"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:15:20: walks.empty.run.parallel: must list at least one "
                      "section"));
  EXPECT_TRUE(Reports(parse, "m.toml:18:16: walks.badname.run.loop: a loop name uses letters"));
}

TEST(ModelManifestSchema, CountsOutOfRange) {
  ModelParse parse = Parse(R"(format = 1
[model]
name = "m"
max_output_tokens = 100000001
[streams.s]
to = "p"
policy = "fixed"
size = 1000001
[walks.w]
partition = "p"
run = { loop = "l", max_iterations = 1000000001, body = "a" }
)");
  EXPECT_TRUE(Reports(parse, "m.toml:4:21: model.max_output_tokens: must be at most 100000000"));
  EXPECT_TRUE(Reports(parse, "m.toml:8:8: streams.s.size: must be at most 1000000"));
  EXPECT_TRUE(
      Reports(parse, "m.toml:11:38: walks.w.run.max_iterations: must be at most 1000000000"));
}

// A manifest may not hold more than kMaxManifestEntries of one kind (validation's recursion and
// its lookups are bounded by it): one node too many, or one edge too many in a walk, is refused
// at the table.
TEST(ModelManifestSchema, TooManyNodesOrEdgesAreRefusedAtTheTable) {
  std::string nodes = "[nodes]\n";
  for (size_t i = 0; i <= kMaxManifestEntries; ++i)
    nodes.append("n").append(std::to_string(i)).append(" = { plugin = \"p\" }\n");
  EXPECT_TRUE(
      Reports(Parse(std::string(kHead) + nodes), "nodes: 4097 entries; a model has at most 4096"));
  std::string edges = "[walks.w]\npartition = \"p\"\nrun = \"a\"\nedges = [\n";
  for (size_t i = 0; i <= kMaxManifestEntries; ++i) edges += "{ from = \"a.x\", emit = \"o\" },\n";
  edges += "]\n";
  EXPECT_TRUE(Reports(Parse(std::string(kHead) + edges),
                      "walks.w.edges: 4097 edges; a walk has at most 4096"));
}

// A walk's program holds at most kMaxManifestEntries sections (reported once), and its inputs
// table as many entries.
TEST(ModelManifestSchema, TooManySectionsOrInputsInAWalkAreRefused) {
  std::string run = "[walks.w]\npartition = \"p\"\nrun = { sequence = [";
  for (size_t i = 0; i <= kMaxManifestEntries; ++i) run.append("\"a\", ");
  run += "] }\n";
  ModelParse sections = Parse(std::string(kHead) + run);
  EXPECT_TRUE(Reports(sections,
                      "walks.w.run.sequence[4095]: more than 4096 sections in one walk; "
                      "a walk has at most 4096"));
  EXPECT_LE(sections.diagnostics.size(), 2u) << JoinDiagnostics(sections.diagnostics);
  std::string inputs = "[walks.w]\npartition = \"p\"\nrun = \"a\"\n[walks.w.inputs]\n";
  for (size_t i = 0; i <= kMaxManifestEntries; ++i)
    inputs.append("\"a.x").append(std::to_string(i)).append("\" = \"request.prompt\"\n");
  EXPECT_TRUE(Reports(Parse(std::string(kHead) + inputs),
                      "walks.w.inputs: 4097 inputs; a walk has at most 4096"));
}

// A stop check names each loop around a node by one bit of 63 (the 64th ends the partition): a
// node inside 64 loops could never stop the innermost, so loops nest 63 deep at most.
TEST(ModelManifestSchema, LoopsNestAtMost63Deep) {
  auto nested = [](size_t depth) {
    std::string run = "\"a\"";
    for (size_t i = 0; i < depth; ++i) {
      run = "{ loop = \"l" + std::to_string(i) + "\", max_iterations = 2, body = " + run + " }";
    }
    return Parse(std::string(kHead) + "[walks.w]\npartition = \"p\"\nrun = " + run + "\n");
  };
  EXPECT_FALSE(Reports(nested(kMaxNestedLoops), "loops nest"));
  EXPECT_TRUE(Reports(nested(kMaxNestedLoops + 1),
                      "loop: loops nest more than 63 deep (a stop check names each loop around "
                      "a node by one of 63 bits)"));
}

TEST(ModelManifestSchema, BadEdges) {
  ModelParse parse = Parse(std::string(kHead) + R"([walks.w]
partition = "p"
run = "a"
edges = [
  { from = "a.x" },
  { from = "a.x", to = "b.y", emit = "out" },
  { from = "a.x", persist = "v", modality = "text" },
  { from = "ax", emit = "out" },
  { from = "a.x", to = "b" },
  { to = "b.y" },
  { from = "a.x", persist = "v", counts_tokens = true },
  { from = "a.x", emit = "t", modality = "text", sample_rate = 16000 },
  { from = "a.x", emit = "p", modality = "audio", sample_rate = 0 },
  { from = "a.x", emit = "q", modality = "audio", sample_rate = 1000001 },
  { from = "a.x", emit = "sub/x" },
  { from = "a.x", persist = "v", modality = "" },
  { from = "a.x", emit = "r", modality = "" },
]
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:8:12: walks.w.edges[0].from: an edge has exactly one of to, "
                      "persist, stream or emit"));
  EXPECT_TRUE(Reports(parse, "m.toml:9:12: walks.w.edges[1].from: an edge has exactly one of"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:10:45: walks.w.edges[2].modality: only emit edges have a "
                      "modality"));
  EXPECT_TRUE(Reports(parse, "m.toml:11:12: walks.w.edges[3].from: expected \"node.output\""));
  EXPECT_TRUE(Reports(parse, "m.toml:12:24: walks.w.edges[4].to: expected \"node.input\""));
  EXPECT_TRUE(Reports(parse, "m.toml:13:3: walks.w.edges[5].from: missing required key"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:14:50: walks.w.edges[6].counts_tokens: only emit edges count output "
                      "tokens"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:15:64: walks.w.edges[7].sample_rate: only emit edges with modality "
                      "\"audio\" have a sample rate"));
  EXPECT_TRUE(Reports(parse, "m.toml:16:65: walks.w.edges[8].sample_rate: must be at least 1"));
  EXPECT_TRUE(
      Reports(parse, "m.toml:17:65: walks.w.edges[9].sample_rate: must be at most 1000000"));
  // An output name names files too: no '/'.
  EXPECT_TRUE(Reports(parse,
                      "m.toml:18:26: walks.w.edges[10].emit: an output name uses letters, "
                      "digits, '_' and '-' and starts with a letter or '_'"));
  // A modality given empty is still given.
  EXPECT_TRUE(Reports(parse,
                      "m.toml:19:45: walks.w.edges[11].modality: only emit edges have a "
                      "modality"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:20:42: walks.w.edges[12].modality: empty: leave it out for "
                      "\"raw\""));
}

TEST(ModelManifestSchema, AnEmptyModelNameIsRefused) {
  EXPECT_TRUE(Reports(Parse("format = 1\n[model]\nname = \"\"\n"),
                      "m.toml:3:8: model.name: empty: a model needs a name"));
}

TEST(ModelManifestSchema, BadWalkInputs) {
  ModelParse parse = Parse(std::string(kHead) + R"([walks.w]
partition = "p"
run = "a"
inputs = { "a.x" = "foo.x", "ax" = "request.prompt", "a.y" = "request" }
)");
  EXPECT_TRUE(
      Reports(parse,
              "m.toml:7:20: walks.w.inputs.\"a.x\": expected \"request.NAME\", "
              "\"persisted.NAME\", \"stream.NAME\" or \"controller.NAME\", found \"foo.x\""));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:7:36: walks.w.inputs.\"ax\": the key names a node input as "
                      "\"node.input\""));
  EXPECT_TRUE(
      Reports(parse,
              "walks.w.inputs.\"a.y\": expected \"request.NAME\", "
              "\"persisted.NAME\", \"stream.NAME\" or \"controller.NAME\", found \"request\""));
}

// A transition to "done" ends a partition, so a walk of that name could never run.
TEST(ModelManifestSchema, AWalkNamedDoneIsRefused) {
  EXPECT_TRUE(Reports(Parse(std::string(kHead) + "[walks.done]\npartition = \"p\"\nrun = \"a\"\n"),
                      "m.toml:4:1: walks.done: 'done' is reserved: a transition to it ends the "
                      "partition"));
}

TEST(ModelManifestSchema, BadDevice) {
  // The last: a megabyte of digits, which std::regex would match one stack frame per digit.
  const std::string huge = "cuda:" + std::string(1 << 20, '0');
  for (const char* device : {"gpu", "cuda:", "cuda:x", "CPU", "cuda:1:2", huge.c_str()}) {
    EXPECT_TRUE(Reports(
        Parse(std::string(kHead) + "[nodes.a]\nplugin = \"p\"\ndevice = \"" + device + "\"\n"),
        "m.toml:6:10: nodes.a.device: expected \"cpu\", \"cuda\" or \"cuda:N\""))
        << device;
  }
}

TEST(ModelManifestSchema, BadChunkPolicies) {
  ModelParse parse = Parse(std::string(kHead) + R"([streams.a]
to = "p"
policy = "tumbling"
[streams.b]
to = "p"
policy = "sliding_window"
window = 2
stride = 3
[streams.c]
to = "p"
policy = "fixed"
size = 0
[streams.d]
to = "p"
policy = ""
[streams.e]
to = "p"
policy = "sliding-window"
window = 4
stride = 2
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:6:10: streams.a.policy: unknown chunk policy 'tumbling' "
                      "(expected sliding_window or fixed)"));
  EXPECT_TRUE(Reports(parse, "m.toml:11:10: streams.b.stride: must not exceed window"));
  EXPECT_TRUE(Reports(parse, "m.toml:15:8: streams.c.size: must be at least 1"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:18:10: streams.d.policy: unknown chunk policy '' "
                      "(expected sliding_window or fixed)"));
  // A misspelt policy is that one problem: its window and stride are not also unknown keys.
  EXPECT_TRUE(Reports(parse,
                      "m.toml:21:10: streams.e.policy: unknown chunk policy "
                      "'sliding-window'"));
  const std::string all = JoinDiagnostics(parse.diagnostics);
  EXPECT_EQ(all.find("unknown key"), std::string::npos) << all;
}

// A misspelt window is one problem (the missing key and the unknown one), not also a stride
// "exceeding" it; and the problems come in file order.
TEST(ModelManifestSchema, AMissingWindowIsNotAlsoAStrideProblemAndProblemsComeInFileOrder) {
  ModelParse parse = Parse(std::string(kHead) + R"([streams.b]
to = "p"
policy = "sliding_window"
windw = 4
stride = 2
)");
  ASSERT_FALSE(parse.model.has_value());
  const std::string all = JoinDiagnostics(parse.diagnostics);
  EXPECT_EQ(all.find("must not exceed window"), std::string::npos) << all;
  EXPECT_TRUE(Reports(parse, "streams.b.window: missing required key")) << all;
  EXPECT_TRUE(Reports(parse, "m.toml:7:9: streams.b.windw: unknown key")) << all;
  for (size_t i = 1; i < parse.diagnostics.size(); ++i) {
    EXPECT_LE(parse.diagnostics[i - 1].where.line, parse.diagnostics[i].where.line) << all;
  }
}

}  // namespace
}  // namespace mstar
