// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ModelRuntime (runtime/engine/model_runtime.h) against raw-ABI plugins
// (tests/plugins/faulty_plugin.cc). The columnar flag as negotiated: a plugin built against
// ABI 1.0 may set the bit that 1.1 calls MSTAR_SUBMODULE_COLUMNAR (it meant nothing then): the
// flag is dropped, so the node runs per request. A plugin that declares columnar steps without a
// batched forward is refused when the model loads, with the node named. The descriptors a
// plugin returns (info, capture_configs) are checked before anything reads their arrays.
#include <gtest/gtest.h>

#include "engine/model_runtime.h"
#include "model/model_manifest.h"
#include "runtime/engine/engine_harness.h"
#include "support/test_support.h"

namespace mstar {
namespace {

const PluginRegistry& FaultRegistry() {
  static const PluginRegistry registry = test::LoadOnly({
      test::TestPluginDir("fault_old_columnar"),
      test::TestPluginDir("fault_columnar_unbatched"),
      test::TestPluginDir("fault_bad_capture_config"),
      test::TestPluginDir("fault_null_capture_configs"),
      test::TestPluginDir("fault_null_buckets"),
      test::TestPluginDir("fault_many_slots"),
      test::TestPluginDir("fault_huge_bucket"),
      test::TestPluginDir("fault_huge_config_stride"),
      test::TestPluginDir("fault_huge_bucket_count"),
      test::TestPluginDir("fault_split_region"),
      test::TestPluginDir("fault_null_stop_output"),
      test::TestPluginDir("fault_wide_capture_configs"),
      test::TestPluginDir("fault_old_token_input"),
  });
  return registry;
}

ModelSpec OneNodeModel(const std::string& plugin) {
  return test::OneNodeModel(plugin, FaultRegistry());
}

TEST(ModelRuntimeColumnarFlag, AnAbi10PluginsColumnarBitIsDropped) {
  Result<std::unique_ptr<ModelRuntime>> runtime =
      ModelRuntime::Load(OneNodeModel("old_columnar_thing"), FaultRegistry(), {});
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  NodeRuntime& node = *(*runtime)->node(0);
  EXPECT_EQ(node.table()->struct_version, 0u);  // negotiated at 1.0
  EXPECT_FALSE(node.columnar());
  EXPECT_TRUE(node.batched());  // what 1.0 meant stays
}

// token_input is a field of 1.3 and MSTAR_SUBMODULE_FINAL_CHUNK a flag of 1.4: a plugin
// negotiated at 1.2 never had them, whatever its info left there, so its resources get no token
// ids and its streams no repeated final chunk.
TEST(ModelRuntimeTokenInput, AnAbi12PluginsTokenInputAndFinalChunkFlagAreNotRead) {
  Result<std::unique_ptr<ModelRuntime>> runtime =
      ModelRuntime::Load(OneNodeModel("old_token_input_thing"), FaultRegistry(), {});
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  NodeRuntime& node = *(*runtime)->node(0);
  EXPECT_EQ(node.table()->struct_version, 2u);  // negotiated at 1.2
  EXPECT_TRUE(node.token_input.empty());
  EXPECT_FALSE(node.wants_final_chunk());
}

TEST(ModelRuntimeColumnarFlag, ColumnarWithoutABatchedForwardIsRefusedNamingTheNode) {
  Result<std::unique_ptr<ModelRuntime>> runtime =
      ModelRuntime::Load(OneNodeModel("columnar_unbatched_thing"), FaultRegistry(), {});
  ASSERT_FALSE(runtime.ok());
  const std::string message = runtime.status().ToString();
  EXPECT_NE(message.find("node 'n'"), std::string::npos) << message;
  EXPECT_NE(message.find("MSTAR_SUBMODULE_COLUMNAR without MSTAR_SUBMODULE_BATCHED"),
            std::string::npos)
      << message;
}

// Each bad descriptor fails the load with InvalidArgument naming the plugin and instance, the
// slot and the field, where reading it would have crashed the host.
TEST(ModelRuntimeDescriptors, BadDescriptorsAreRefusedNamingThePluginSlotAndField) {
  const struct {
    const char* plugin;
    const char* message;
  } cases[] = {
      {"bad_capture_config_thing",
       "fault_bad_capture_config/n: capture_configs: configs[0].replay_walks[0] is NULL"},
      {"null_capture_configs_thing",
       "fault_null_capture_configs/n: capture_configs: the configs array is NULL but the count "
       "is 1"},
      {"null_buckets_thing",
       "fault_null_buckets/n: capture_configs: configs[0].buckets is NULL but num_buckets is 2"},
      {"null_stop_output_thing", "fault_null_stop_output/n: info: stop_outputs[1] is NULL"},
      {"many_slots_thing",
       "fault_many_slots/n: capture_configs: configs[0].num_slots is 65; at most 64"},
      {"huge_bucket_thing",
       "fault_huge_bucket/n: capture_configs: configs[0].buckets[1].batch_size is 1048576; at "
       "most 65536"},
      {"huge_bucket_count_thing",
       "fault_huge_bucket_count/n: capture_configs: configs[0].num_replay_walks 1, num_buckets "
       "4294967295; at most 1024 and 4096 (garbage)"},
      {"split_region_thing",
       "fault_split_region/n: capture_configs: configs[0].flags: MSTAR_CAPTURE_SPLIT_BY_KEY on "
       "region 'mlp'"},
      {"huge_config_stride_thing",
       "fault_huge_config_stride/n: capture_configs: configs[0].struct_size is 2147483648, more "
       "than 4096 (garbage)"},
  };
  for (const auto& c : cases) {
    Result<std::unique_ptr<ModelRuntime>> runtime =
        ModelRuntime::Load(OneNodeModel(c.plugin), FaultRegistry(), {});
    if (runtime.ok()) {
      ADD_FAILURE() << c.plugin << ": loaded";
      continue;
    }
    EXPECT_EQ(runtime.status().code(), Code::kInvalidArgument) << c.plugin;
    EXPECT_NE(runtime.status().message().find(c.message), std::string::npos)
        << c.plugin << ": " << runtime.status().message();
  }
}

// A plugin of a later minor whose capture config struct grew: the array's elements are its struct
// size apart, and the host reads the fields it knows of each (R5).
TEST(ModelRuntimeDescriptors, CaptureConfigsOfALargerStructAreReadAtTheirOwnStride) {
  Result<std::unique_ptr<ModelRuntime>> runtime =
      ModelRuntime::Load(OneNodeModel("wide_capture_configs_thing"), FaultRegistry(), {});
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  const std::vector<mstar_capture_config_t>& configs = (*runtime)->node(0)->capture_configs;
  ASSERT_EQ(configs.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(configs[i].num_buckets, i + 1);
    EXPECT_EQ(configs[i].capture_key, 7u + i);
    EXPECT_STREQ(configs[i].replay_walks[0], "prefill");
  }
}

}  // namespace
}  // namespace mstar
