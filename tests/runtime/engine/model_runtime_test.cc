// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ModelRuntime (runtime/engine/model_runtime.h): the columnar flag as negotiated, against raw-ABI
// plugins (tests/plugins/faulty_plugin.cc). A plugin built against ABI 1.0 may set the bit that
// 1.1 calls MSTAR_SUBMODULE_COLUMNAR (it meant nothing then): the flag is dropped, so the node
// runs per request. A plugin that declares columnar steps without a batched forward is refused
// when the model loads, with the node named.
#include <gtest/gtest.h>

#include "engine/model_runtime.h"
#include "model/model_manifest.h"
#include "support/test_support.h"

namespace mstar {
namespace {

const PluginRegistry& FlagRegistry() {
  static const PluginRegistry registry = test::LoadOnly(
      {test::TestPluginDir("fault_old_columnar"), test::TestPluginDir("fault_columnar_unbatched")});
  return registry;
}

// A one-walk model of node "n" over plugin `plugin`.
ModelSpec OneNodeModel(const std::string& plugin) {
  const std::string text = R"(
format = 1
[model]
name = "flags"
[nodes.n]
plugin = ")" + plugin + R"("
[partitions.main]
initial = "prefill"
[walks.prefill]
partition = "main"
run = "n"
inputs = { "n.tokens" = "request.prompt" }
)";
  ModelParse parse = ParseModelManifestText(text, "flags.toml", {}, &FlagRegistry());
  EXPECT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  return parse.model ? *parse.model : ModelSpec{};
}

TEST(ModelRuntimeColumnarFlag, AnAbi10PluginsColumnarBitIsDropped) {
  Result<std::unique_ptr<ModelRuntime>> runtime =
      ModelRuntime::Load(OneNodeModel("old_columnar_thing"), FlagRegistry(), {});
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  NodeRuntime& node = *(*runtime)->node(0);
  EXPECT_EQ(node.table()->struct_version, 0u);  // negotiated at 1.0
  EXPECT_FALSE(node.columnar());
  EXPECT_TRUE(node.batched());  // what 1.0 meant stays
}

TEST(ModelRuntimeColumnarFlag, ColumnarWithoutABatchedForwardIsRefusedNamingTheNode) {
  Result<std::unique_ptr<ModelRuntime>> runtime =
      ModelRuntime::Load(OneNodeModel("columnar_unbatched_thing"), FlagRegistry(), {});
  ASSERT_FALSE(runtime.ok());
  const std::string message = runtime.status().ToString();
  EXPECT_NE(message.find("node 'n'"), std::string::npos) << message;
  EXPECT_NE(message.find("MSTAR_SUBMODULE_COLUMNAR without MSTAR_SUBMODULE_BATCHED"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace mstar
