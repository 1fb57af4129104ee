// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The cross-checks of a model manifest's partitions (model_validate.cc): transitions go to walks
// of the partition, reach every walk and reach "done", a persisted value is read only after a
// walk persists it, and all of these follow what a model controller chooses instead.
#include <gtest/gtest.h>

#include "model/model_manifest.h"
#include "model/model_validate.h"
#include "plugin/registry.h"
#include "runtime/model/model_validate_fixture.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::Parse;
using test::Reports;

// A partition's walks run in the order of its transitions: a walk that reads a persisted value
// before any walk of the partition persists it fails every request, so the manifest is refused.
// The same walks in the right order are accepted.
TEST(ModelValidate, APersistedValueIsReadOnlyAfterAWalkPersistsIt) {
  auto manifest = [](const char* initial, const char* transitions) {
    return std::string("[partitions.main]\ninitial = \"") + initial +
           "\"\ntransitions = " + transitions + R"(
[walks.prefill]
partition = "main"
run = "a"
inputs = { "a.x" = "request.prompt" }
edges = [{ from = "a.y", persist = "last" }]
[walks.decode]
partition = "main"
run = "b"
inputs = { "b.x" = "persisted.last" }
)";
  };
  ModelParse wrong = Parse(manifest("decode", "{ decode = \"prefill\", prefill = \"done\" }"));
  EXPECT_TRUE(Reports(wrong,
                      "m.toml:21:20: walks.decode.inputs: walk 'decode' reads persisted value "
                      "'last' before any walk persists it (partition 'main' runs 'decode')"));
  EXPECT_EQ(wrong.diagnostics.size(), 1u) << JoinDiagnostics(wrong.diagnostics);
  ModelParse right = Parse(manifest("prefill", "{ prefill = \"decode\", decode = \"done\" }"));
  EXPECT_TRUE(right.model.has_value()) << JoinDiagnostics(right.diagnostics);
}

TEST(ModelValidate, PartitionsTransitionsAndReachability) {
  ModelParse parse = Parse(R"([partitions.main]
initial = "w"
transitions = { w = "v", ghost = "w", v = "nowhere" }
[partitions.side]
initial = "w"
[walks.w]
partition = "main"
run = "a"
[walks.v]
partition = "main"
run = "b"
[walks.lost]
partition = "main"
run = "c"
)");
  EXPECT_TRUE(Reports(parse,
                      "partitions.main.transitions.ghost: transition from an unknown walk "
                      "'ghost'"));
  EXPECT_TRUE(Reports(parse,
                      "partitions.main.transitions.v: transition to an unknown walk "
                      "'nowhere'"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:13:1: partitions.side.initial: initial walk 'w' is not a "
                      "walk of this partition"));
  EXPECT_TRUE(Reports(parse,
                      "m.toml:21:1: walks.lost: unreachable walk: no transition of "
                      "partition 'main' leads to it"));
  EXPECT_EQ(parse.diagnostics.size(), 4u) << JoinDiagnostics(parse.diagnostics);
}

// A transition to a walk of another partition names that partition, at the transition's key.
TEST(ModelValidate, ATransitionToAnotherPartitionsWalkSaysWhoseItIs) {
  ModelParse parse = Parse(R"([partitions.main]
initial = "w"
transitions = { w = "s" }
[partitions.side]
initial = "s"
[walks.w]
partition = "main"
run = "a"
[walks.s]
partition = "side"
run = "b"
)");
  EXPECT_TRUE(Reports(parse,
                      "partitions.main.transitions.w: transition to walk 's' of partition "
                      "'side'"));
}

TEST(ModelValidate, WalksWithoutATransitionEndThePartition) {
  // prefill -> decode -> done (the default); a transition to itself repeats a walk.
  ModelParse parse = Parse(R"([partitions.main]
initial = "w"
transitions = { w = "v" }
[walks.w]
partition = "main"
run = "a"
[walks.v]
partition = "main"
run = { loop = "l", max_iterations = 3, body = "b" }
[walks.u]
partition = "main"
run = "c"
)");
  EXPECT_TRUE(Reports(parse,
                      "m.toml:19:1: walks.u: unreachable walk: no transition of partition "
                      "'main' leads to it"));
  EXPECT_TRUE(Reports(Parse("[walks.w]\npartition = \"main\"\nrun = \"a\"\n"),
                      "partitions: a model needs at least one partition"));
}

// Stop checks end loops, not walks: transitions that never reach "done" would run forever. A
// partition fed by a stream may cycle (its stream's end ends it), and so may a model controller's.
TEST(ModelValidate, TransitionsMustReachDone) {
  const std::string walks = R"([walks.w]
partition = "main"
run = "a"
[walks.v]
partition = "main"
run = "b"
[walks.x]
partition = "main"
run = "c"
)";
  EXPECT_TRUE(Reports(Parse("[partitions.main]\ninitial = \"w\"\n"
                            "transitions = { w = \"v\", v = \"w\" }\n" +
                            walks),
                      "m.toml:12:30: partitions.main.transitions.v: the transitions never reach "
                      "\"done\": w -> v -> w repeats forever (stop checks end loops, not walks; "
                      "only a partition fed by a stream, or one whose next walks a model "
                      "controller chooses, may cycle)"));
  EXPECT_TRUE(Reports(Parse("[partitions.main]\ninitial = \"x\"\n"
                            "transitions = { x = \"w\", w = \"v\", v = \"v\" }\n" +
                            walks),
                      "m.toml:12:39: partitions.main.transitions.v: the transitions never reach "
                      "\"done\": v -> v repeats forever"));
  // One walk of the cycle leaving it is enough.
  ModelParse leaves = Parse(
      "[partitions.main]\ninitial = \"w\"\n"
      "transitions = { w = \"v\", v = \"x\", x = \"done\" }\n" +
      walks);
  EXPECT_TRUE(leaves.model.has_value()) << JoinDiagnostics(leaves.diagnostics);

  const std::string fed = R"([partitions.main]
initial = "w"
transitions = { w = "v" }
[partitions.side]
initial = "x"
transitions = { x = "x" }
[streams.s]
to = "side"
policy = "fixed"
size = 2
[walks.w]
partition = "main"
run = "a"
edges = [{ from = "a.y", stream = "s" }]
[walks.v]
partition = "main"
run = "b"
[walks.x]
partition = "side"
run = "c"
inputs = { "c.x" = "stream.s" }
)";
  ModelParse stream = Parse(fed);
  EXPECT_TRUE(stream.model.has_value()) << JoinDiagnostics(stream.diagnostics);
  ModelParse controlled = ParseModelManifestText(
      "format = 1\n[model]\nname = \"m\"\ncontroller = \"ctl\"\n[nodes.a]\nplugin = \"p\"\n"
      "[partitions.main]\ninitial = \"w\"\ntransitions = { w = \"w\" }\n"
      "[walks.w]\npartition = \"main\"\nrun = \"a\"\n",
      "m.toml");
  EXPECT_TRUE(controlled.model.has_value()) << JoinDiagnostics(controlled.diagnostics);
}

// The checks of the walks' order follow what the named controller chooses: one that chooses no
// walk (kit_model_prompt only encodes prompts) leaves the manifest's transitions to run, so they
// must reach "done" and reach every walk; one that chooses the next walk (kit_model) may cycle
// and pick any walk of the partition. Without the registry, a controller is assumed to choose.
TEST(ModelValidate, TheWalkOrderChecksFollowWhatTheControllerChooses) {
  const PluginRegistry registry = test::LoadOnly({test::TestPluginDir("kit")});
  const std::string manifest =
      "format = 1\n[model]\nname = \"m\"\ncontroller = \"CTL\"\n[nodes.a]\nplugin = \"kit_add\"\n"
      "[partitions.main]\ninitial = \"w\"\ntransitions = { w = \"w\" }\n"
      "[walks.w]\npartition = \"main\"\nrun = \"a\"\n"
      "[walks.spare]\npartition = \"main\"\nrun = \"a\"\n";
  auto with = [&](const std::string& controller, const PluginRegistry* r) {
    std::string text = manifest;
    text.replace(text.find("CTL"), 3, controller);
    return ParseModelManifestText(text, "m.toml", {}, r);
  };
  ModelParse plain = with("kit_model_prompt", &registry);
  EXPECT_TRUE(
      Reports(plain, "partitions.main.transitions.w: the transitions never reach \"done\""));
  EXPECT_TRUE(Reports(plain, "walks.spare: unreachable walk"));
  EXPECT_EQ(plain.diagnostics.size(), 2u) << JoinDiagnostics(plain.diagnostics);
  ModelParse choosing = with("kit_model", &registry);
  EXPECT_TRUE(choosing.model.has_value()) << JoinDiagnostics(choosing.diagnostics);
  ModelParse unknown = with("kit_model_prompt", nullptr);
  EXPECT_TRUE(unknown.model.has_value()) << JoinDiagnostics(unknown.diagnostics);
}

// A controller that chooses only the first walk may start any walk of the partition, so the
// transitions from every walk must reach "done"; one that chooses no walk gives no inputs.
TEST(ModelValidate, ChecksFollowAControllerThatChoosesOnlyTheFirstWalkOrNone) {
  const std::string manifest =
      "format = 1\n[model]\nname = \"m\"\ncontroller = \"ctl\"\n[nodes.a]\nplugin = \"p\"\n"
      "[partitions.main]\ninitial = \"w\"\ntransitions = { w = \"done\", v = \"v\" }\n"
      "[walks.w]\npartition = \"main\"\nrun = \"a\"\n"
      "[walks.v]\npartition = \"main\"\nrun = \"a\"\ninputs = { \"a.x\" = \"controller.x\" }\n";
  ModelParse parse = ParseModelManifestText(manifest, "m.toml");  // assumed to choose both
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  auto problems = [&](ControllerChoices choices) {
    ModelSpec model = *parse.model;
    Diagnostics diagnostics;
    ValidateModel(model, &diagnostics, choices);
    return JoinDiagnostics(diagnostics);
  };
  const std::string first_only = problems({true, false});
  EXPECT_NE(first_only.find("partitions.main.transitions.v: the transitions never reach \"done\": "
                            "v -> v repeats forever"),
            std::string::npos)
      << first_only;
  EXPECT_EQ(first_only.find("controller.x"), std::string::npos) << first_only;
  const std::string none = problems({false, false});
  EXPECT_NE(none.find("walks.v.inputs: input 'a.x' reads controller.x, but controller 'ctl' "
                      "chooses no walk"),
            std::string::npos)
      << none;
  EXPECT_EQ(problems({true, true}), "");
}

}  // namespace
}  // namespace mstar
