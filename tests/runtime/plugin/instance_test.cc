// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/instance.h"

#include <gtest/gtest.h>

#include <memory>

#include "config/toml_reader.h"
#include "host/memory_ledger.h"
#include "support/test_support.h"

namespace mstar {
namespace {

std::shared_ptr<const ConfigTree> Config(const std::string& text) {
  Diagnostics d;
  auto table = ParseTomlText(text, "model.toml", &d);
  EXPECT_TRUE(table.has_value()) << JoinDiagnostics(d);
  return std::make_shared<ConfigTree>(std::move(*table), "model.toml", "nodes.lm.config");
}

// An instance "lm" of the kit's kit_add with config_text as its config (the registry may go: the
// instance holds the library).
Result<std::unique_ptr<PluginInstance>> CreateKitAdd(const std::string& config_text) {
  PluginRegistry registry = test::LoadOnly({test::TestPluginDir("kit")});
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_SUBMODULE, "kit_add");
  if (!factory.ok()) return factory.status();
  InstanceOptions options;
  options.name = "lm";
  options.config = Config(config_text);
  return PluginInstance::Create(factory.value(), options);
}

TEST(PluginInstance, CreatesAndDestroysThroughTheFactory) {
  Result<std::unique_ptr<PluginInstance>> instance = CreateKitAdd("add = 5\n");
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  EXPECT_EQ((*instance)->label(), "kit/lm");
  EXPECT_NE((*instance)->submodule(), nullptr);
  EXPECT_EQ((*instance)->resource(), nullptr);
  EXPECT_EQ((*instance)->context()->submodule_self, (*instance)->self());
}

TEST(PluginInstance, CreateErrorsNameThePluginInstanceAndConfigKey) {
  Result<std::unique_ptr<PluginInstance>> instance = CreateKitAdd("add = \"five\"\n");
  ASSERT_FALSE(instance.ok());
  EXPECT_EQ(instance.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(
      instance.status().message(),
      "kit/lm: create: model.toml:1:7: nodes.lm.config.add: expected an integer, found a string");
}

// A key the plugin never looks at (most likely a misspelt one) is reported where it is written;
// the keys it read are not.
TEST(PluginInstance, KeysThePluginDidNotReadAreReported) {
  test::LogCapture logs;
  Result<std::unique_ptr<PluginInstance>> instance =
      CreateKitAdd("add = 5\nadd_on = 1\n[extra]\nx = 1\n");
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  EXPECT_TRUE(
      logs.Contains("model.toml:2:10: nodes.lm.config.add_on: kit/lm did not read this key"));
  EXPECT_TRUE(logs.Contains("nodes.lm.config.extra: kit/lm did not read this key"));
  EXPECT_FALSE(logs.Contains("nodes.lm.config.add: ")) << "add was read";
}

// A plugin shards by its rank and world size and exchanges through its communicator: a rank
// outside the group, one its communicator disagrees with, or one of several without a
// communicator (its exchanges would act as a group of one) is refused before create.
TEST(PluginInstance, ARankOutsideItsGroupOrItsCommunicatorIsRefused) {
  PluginRegistry registry = test::LoadOnly({test::TestPluginDir("kit")});
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_SUBMODULE, "kit_add");
  ASSERT_TRUE(factory.ok());
  mstar_comm_t comm;
  comm.rank = 1;
  comm.size = 2;
  struct Case {
    uint32_t rank, world_size;
    mstar_comm_t* comm;
    const char* message;
  };
  for (const Case& c :
       {Case{2, 2, nullptr, "instance 'lm': rank 2 of 2 is not a rank of the group"},
        Case{0, 0, nullptr, "instance 'lm': rank 0 of 0 is not a rank of the group"},
        Case{0, 2, &comm,
             "instance 'lm': rank 0 of 2 disagrees with its communicator (rank 1 "
             "of 2)"},
        Case{1, 2, nullptr, "instance 'lm': rank 1 of 2 has no communicator"}}) {
    InstanceOptions options;
    options.name = "lm";
    options.config = Config("add = 1\n");
    options.rank = c.rank;
    options.world_size = c.world_size;
    options.comm = c.comm;
    Result<std::unique_ptr<PluginInstance>> instance =
        PluginInstance::Create(factory.value(), options);
    ASSERT_FALSE(instance.ok()) << c.message;
    EXPECT_EQ(instance.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(instance.status().message(), c.message);
  }
  InstanceOptions agreeing;
  agreeing.name = "lm";
  agreeing.config = Config("add = 1\n");
  agreeing.rank = 1;
  agreeing.world_size = 2;
  agreeing.comm = &comm;
  Result<std::unique_ptr<PluginInstance>> instance =
      PluginInstance::Create(factory.value(), agreeing);
  EXPECT_TRUE(instance.ok()) << instance.status().ToString();
}

TEST(PluginInstance, LibraryOutlivesTheRegistryWhileAnInstanceLives) {
  std::unique_ptr<PluginInstance> instance;
  std::weak_ptr<PluginLibrary> library;
  {
    PluginRegistry registry = test::LoadOnly({test::TestPluginDir("kit")});
    Result<FactoryRef> factory = registry.Find(MSTAR_KIND_TIER, "kit_memory");
    ASSERT_TRUE(factory.ok());
    library = factory.value().library;
    InstanceOptions options;
    options.name = "host_tier";
    auto created = PluginInstance::Create(factory.value(), options);
    ASSERT_TRUE(created.ok());
    instance = std::move(created.value());
  }
  // The registry is gone; the instance holds the library, and still works.
  EXPECT_FALSE(library.expired());
  mstar_tier_info_t info{sizeof(mstar_tier_info_t), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  EXPECT_TRUE(TakeStatus(instance->tier()->info(instance->self(), &info)).ok());
  // The last instance gone, nothing holds the library any more.
  instance.reset();
  EXPECT_TRUE(library.expired());
}

// What an instance leaves behind stays its own: memory_alloc blocks it never freed are reported as
// a leak (a tensor it made that lives on with its holder is not one), and no later instance's
// context takes over either (the ledger knows owners by their context's address).
TEST(PluginInstance, WhatAnInstanceLeavesBehindIsNotALaterInstancesOwn) {
  constexpr DLDevice kCpu{kDLCPU, 0};
  test::LogCapture logs;
  mstar_tensor_t* held = nullptr;
  void* leaked = nullptr;
  const mstar_host_context* gone = nullptr;  // the first instance's context
  {
    Result<std::unique_ptr<PluginInstance>> first = CreateKitAdd("add = 1\n");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    const mstar_host_api_t* host = (*first)->host();
    mstar_host_context_t* context = (*first)->context();
    gone = context;
    ASSERT_EQ(host->memory_alloc(context, kCpu, 4096, 0, 0, &leaked), nullptr);
    const int64_t shape = 256;
    ASSERT_EQ(host->tensor_alloc(context, kCpu, DLDataType{kDLFloat, 32, 1}, 1, &shape, &held),
              nullptr);
  }
  EXPECT_TRUE(
      logs.Contains("[kit/lm] was destroyed still holding 4096 bytes of memory_alloc "
                    "memory (leak)"))
      << ::testing::PrintToString(logs.Lines());
  // Blocks still name it: it is kept (freed, AddressSanitizer would report this read).
  EXPECT_EQ(gone->label, "kit/lm");
  EXPECT_EQ(MemoryLedger::Global().HeldBy(gone), 4096u + 1024u);  // the block, the tensor
  for (int i = 0; i < 4; ++i) {
    Result<std::unique_ptr<PluginInstance>> later = CreateKitAdd("add = 1\n");
    ASSERT_TRUE(later.ok()) << later.status().ToString();
    EXPECT_EQ(MemoryLedger::Global().HeldBy((*later)->context()), 0u) << i;
  }
  held->deleter(held);
  EXPECT_TRUE(MemoryLedger::Global().Free(leaked).ok());
}

}  // namespace
}  // namespace mstar
