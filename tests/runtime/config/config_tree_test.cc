// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The host's config view, through the host table exactly as a plugin sees it.
#include "config/config_tree.h"

#include <gtest/gtest.h>

#include "config/toml_reader.h"
#include "host/host_api.h"

namespace mstar {
namespace {

class ConfigViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Diagnostics d;
    auto table = ParseTomlText(
        "[model]\nhidden = 64\nrate = 0.5\nname = \"lm\"\nuse_bias = false\n"
        "layers = [1, 2, 3]\n[model.rope]\ntheta = 10000\n",
        "m.toml", &d);
    ASSERT_TRUE(table.has_value());
    tree_ = std::make_unique<ConfigTree>(std::move(*table), "m.toml", "nodes.lm.config");
  }
  const mstar_host_api_t* api() { return host_.table(); }
  const mstar_config_t* root() { return tree_->root(); }

  HostApi host_{"config_test"};
  std::unique_ptr<ConfigTree> tree_;
};

TEST_F(ConfigViewTest, ReadsTypedValuesByDottedPath) {
  int64_t hidden = 0;
  ASSERT_EQ(api()->config_as_int(api()->config_get(root(), "model.hidden"), &hidden), nullptr);
  EXPECT_EQ(hidden, 64);
  double theta = 0;
  ASSERT_EQ(api()->config_as_double(api()->config_get(root(), "model.rope.theta"), &theta),
            nullptr);
  EXPECT_DOUBLE_EQ(theta, 10000.0);  // integers read as numbers
  const char* name = nullptr;
  uint64_t size = 0;
  ASSERT_EQ(api()->config_as_string(api()->config_get(root(), "model.name"), &name, &size),
            nullptr);
  EXPECT_EQ(std::string(name, size), "lm");
  uint32_t bias = 1;
  ASSERT_EQ(api()->config_as_bool(api()->config_get(root(), "model.use_bias"), &bias), nullptr);
  EXPECT_EQ(bias, 0u);
}

TEST_F(ConfigViewTest, TablesAndArraysCanBeWalked) {
  const mstar_config_t* model = api()->config_get(root(), "model");
  EXPECT_EQ(api()->config_kind(model), MSTAR_CONFIG_TABLE);
  EXPECT_EQ(api()->config_size(model), 6u);
  EXPECT_STREQ(api()->config_key_at(model, 0), "hidden");
  const mstar_config_t* layers = api()->config_get(model, "layers");
  ASSERT_EQ(api()->config_kind(layers), MSTAR_CONFIG_ARRAY);
  ASSERT_EQ(api()->config_size(layers), 3u);
  int64_t third = 0;
  ASSERT_EQ(api()->config_as_int(api()->config_at(layers, 2), &third), nullptr);
  EXPECT_EQ(third, 3);
  EXPECT_EQ(api()->config_at(layers, 3), nullptr);
}

TEST_F(ConfigViewTest, WrongKindNamesFileLineAndFullKey) {
  int64_t value = 42;
  mstar_status_t* status = api()->config_as_int(api()->config_get(root(), "model.name"), &value);
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(api()->status_code(status), MSTAR_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(api()->status_message(status),
               "m.toml:4:8: nodes.lm.config.model.name: expected an integer, found a string");
  api()->status_release(status);
  EXPECT_EQ(value, 42);  // a failing call leaves its output untouched
}

TEST_F(ConfigViewTest, MissingValuesChainToNotFound) {
  const mstar_config_t* absent = api()->config_get(root(), "model.nope.deeper");
  EXPECT_EQ(absent, nullptr);
  EXPECT_EQ(api()->config_kind(absent), MSTAR_CONFIG_NONE);
  EXPECT_EQ(api()->config_get(absent, "x"), nullptr);
  int64_t value = 0;
  mstar_status_t* status = api()->config_as_int(absent, &value);
  EXPECT_EQ(api()->status_code(status), MSTAR_ERR_NOT_FOUND);
  api()->status_release(status);
  EXPECT_STREQ(api()->config_where(absent), "<none>");
}

TEST_F(ConfigViewTest, WhereLocatesEveryNode) {
  EXPECT_STREQ(api()->config_where(api()->config_get(root(), "model.rope.theta")),
               "m.toml:8:9: nodes.lm.config.model.rope.theta");
  EXPECT_STREQ(api()->config_where(api()->config_at(api()->config_get(root(), "model.layers"), 1)),
               "m.toml:6:14: nodes.lm.config.model.layers[1]");
}

// A value an override set (it has no position in the file) is located at --set, not at the file.
TEST(ConfigView, AValueSetByAnOverrideIsLocatedAtSet) {
  Diagnostics d;
  auto table = ParseTomlText("[model]\nhidden = 64\n", "m.toml", &d);
  ASSERT_TRUE(table.has_value());
  table->get_as<toml::table>("model")->insert_or_assign("label", 5);
  ConfigTree tree(std::move(*table), "m.toml", "nodes.lm.config");
  HostApi host("config_test");
  const mstar_host_api_t* api = host.table();
  EXPECT_STREQ(api->config_where(api->config_get(tree.root(), "model.label")),
               "--set: nodes.lm.config.model.label");
  EXPECT_STREQ(api->config_where(api->config_get(tree.root(), "model.hidden")),
               "m.toml:2:10: nodes.lm.config.model.hidden");
}

}  // namespace
}  // namespace mstar
