// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Checkpoint identity: from the safetensors index when present, else from shard names and sizes;
// what changes it and what does not; errors naming the path; where a model's weights are found.
#include "model/checkpoint_identity.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "model/model_manifest.h"
#include "support/test_support.h"

namespace mstar {
namespace {

using test::TempDir;
using test::WriteFile;

std::vector<uint8_t> IdentityOf(const std::string& path) {
  Result<std::vector<uint8_t>> identity = CheckpointIdentity(path);
  EXPECT_TRUE(identity.ok()) << identity.status().ToString();
  return identity.ok() ? identity.value() : std::vector<uint8_t>{};
}

// A sharded checkpoint without an index: two shards and a config.
void WriteShards(const TempDir& dir, size_t second_shard_size = 200) {
  WriteFile(dir.file("model-00001-of-00002.safetensors"), std::string(100, 'a'));
  WriteFile(dir.file("model-00002-of-00002.safetensors"), std::string(second_shard_size, 'b'));
  WriteFile(dir.file("config.json"), R"({"hidden_size": 32})");
}

TEST(CheckpointIdentityTest, IndexNamesTheCheckpoint) {
  TempDir a, b;
  for (const TempDir* dir : {&a, &b}) {
    WriteShards(*dir);
    WriteFile(dir->file("model.safetensors.index.json"), R"({"weight_map": {"w": "s1"}})");
  }
  std::vector<uint8_t> identity = IdentityOf(a.path());
  EXPECT_EQ(identity.size(), 32u);
  EXPECT_EQ(identity, IdentityOf(b.path()));  // the same description, another directory
  // With an index, the shards' sizes are not looked at; the index's bytes are.
  WriteFile(b.file("model-00002-of-00002.safetensors"), std::string(300, 'b'));
  EXPECT_EQ(identity, IdentityOf(b.path()));
  WriteFile(b.file("model.safetensors.index.json"), R"({"weight_map": {"w": "s2"}})");
  EXPECT_NE(identity, IdentityOf(b.path()));
}

TEST(CheckpointIdentityTest, ShardNamesAndSizesWithoutIndex) {
  TempDir a, b;
  WriteShards(a);
  WriteShards(b);
  std::vector<uint8_t> identity = IdentityOf(a.path());
  EXPECT_EQ(identity, IdentityOf(b.path()));
  // Contents of the same size are not read: the identity names, it does not checksum.
  WriteFile(b.file("model-00001-of-00002.safetensors"), std::string(100, 'z'));
  EXPECT_EQ(identity, IdentityOf(b.path()));
  // Other files do not count.
  WriteFile(b.file("README.md"), "notes");
  EXPECT_EQ(identity, IdentityOf(b.path()));
}

TEST(CheckpointIdentityTest, ChangedShardSizeChangesIt) {
  TempDir a, b;
  WriteShards(a);
  WriteShards(b, 201);
  EXPECT_NE(IdentityOf(a.path()), IdentityOf(b.path()));
}

TEST(CheckpointIdentityTest, ChangedConfigOrShardNameChangesIt) {
  TempDir dir;
  WriteShards(dir);
  std::vector<uint8_t> before = IdentityOf(dir.path());
  WriteFile(dir.file("config.json"), R"({"hidden_size": 64})");
  std::vector<uint8_t> config_changed = IdentityOf(dir.path());
  EXPECT_NE(before, config_changed);
  std::filesystem::rename(dir.file("model-00002-of-00002.safetensors"),
                          dir.file("model-00003-of-00003.safetensors"));
  EXPECT_NE(config_changed, IdentityOf(dir.path()));
}

TEST(CheckpointIdentityTest, OneSafetensorsFile) {
  TempDir a, b;
  WriteFile(a.file("model.safetensors"), std::string(64, 'x'));
  WriteFile(b.file("model.safetensors"), std::string(65, 'x'));
  std::vector<uint8_t> file_identity = IdentityOf(a.file("model.safetensors"));
  EXPECT_EQ(file_identity, IdentityOf(a.path()));  // the file alone describes as its directory
  EXPECT_NE(file_identity, IdentityOf(b.file("model.safetensors")));
}

TEST(CheckpointIdentityTest, ErrorsNameThePath) {
  TempDir dir;
  Result<std::vector<uint8_t>> missing = CheckpointIdentity(dir.file("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.file("nope")), std::string::npos)
      << missing.status().message();

  WriteFile(dir.file("config.json"), "{}");
  Result<std::vector<uint8_t>> empty = CheckpointIdentity(dir.path());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no .safetensors"), std::string::npos)
      << empty.status().message();
  EXPECT_NE(empty.status().message().find(dir.path()), std::string::npos);

  Result<std::vector<uint8_t>> not_weights = CheckpointIdentity(dir.file("config.json"));
  ASSERT_FALSE(not_weights.ok());
  EXPECT_NE(not_weights.status().message().find(dir.file("config.json")), std::string::npos)
      << not_weights.status().message();
}

ModelSpec Parse(const TempDir& dir, const std::string& model_table, const std::string& nodes) {
  const std::string path = dir.file("m.toml");
  WriteFile(path, "format = 1\n[model]\nname = \"m\"\n" + model_table + "\n" + nodes +
                      R"(
[partitions.main]
initial = "w"
[walks.w]
partition = "main"
run = "a"
)");
  ModelParse parse = ParseModelManifestFile(path, {}, nullptr);
  EXPECT_TRUE(parse.diagnostics.empty()) << parse.diagnostics.front().ToString();
  return parse.model ? *parse.model : ModelSpec{};
}

TEST(ModelCheckpointIdentityTest, FromNodeWeightsOrTheCheckpointKey) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("w1"));
  std::filesystem::create_directories(dir.file("w2"));
  WriteFile(dir.file("w1/model.safetensors"), std::string(10, 'a'));
  WriteFile(dir.file("w2/model.safetensors"), std::string(20, 'a'));
  const std::string two_nodes =
      "[nodes.a]\nplugin = \"p\"\nconfig = { weights = \"w1\" }\n"
      "[nodes.b]\nplugin = \"p\"\nconfig = { weights = \"w2\" }\n";

  // No weights anywhere: empty.
  Result<std::vector<uint8_t>> none =
      ModelCheckpointIdentity(Parse(dir, "", "[nodes.a]\nplugin = \"p\"\n"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // Node weights (relative to the manifest's directory) combine; one node alone differs.
  Result<std::vector<uint8_t>> both = ModelCheckpointIdentity(Parse(dir, "", two_nodes));
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->size(), 32u);
  Result<std::vector<uint8_t>> first_only = ModelCheckpointIdentity(
      Parse(dir, "", "[nodes.a]\nplugin = \"p\"\nconfig = { weights = \"w1\" }\n"));
  ASSERT_TRUE(first_only.ok());
  EXPECT_NE(both.value(), first_only.value());
  Result<std::vector<uint8_t>> second_only = ModelCheckpointIdentity(Parse(
      dir, "",
      "[nodes.a]\nplugin = \"p\"\n[nodes.b]\nplugin = \"p\"\nconfig = { weights = \"w2\" }\n"));
  ASSERT_TRUE(second_only.ok());
  EXPECT_NE(both.value(), second_only.value());

  // [model].checkpoint wins over the nodes' weights and is that checkpoint's identity.
  Result<std::vector<uint8_t>> keyed =
      ModelCheckpointIdentity(Parse(dir, "checkpoint = \"w2\"", two_nodes));
  ASSERT_TRUE(keyed.ok());
  EXPECT_EQ(keyed.value(), IdentityOf(dir.file("w2")));

  // A missing path names the key it came from.
  Result<std::vector<uint8_t>> missing = ModelCheckpointIdentity(
      Parse(dir, "", "[nodes.a]\nplugin = \"p\"\nconfig = { weights = \"gone\" }\n"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nodes.a.config.weights"), std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace mstar
