// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "tier_harness.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "config/toml_reader.h"
#include "support/test_support.h"

namespace mstar::test {

const PluginRegistry& TierRegistry() {
  static const PluginRegistry registry = LoadOnly({MSTAR_TIER_HOST_DIR, MSTAR_TIER_DISK_DIR});
  return registry;
}

mstar_tier_key_t KeyOf(uint64_t n) {
  mstar_tier_key_t key{};
  for (int i = 0; i < 32; ++i) key.bytes[i] = static_cast<uint8_t>((n >> (8 * (i % 8))) ^ i);
  return key;
}

std::vector<uint8_t> Pattern(uint64_t size, uint64_t seed) {
  std::vector<uint8_t> out(size);
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < size; i += 8) {
    uint64_t v = rng();
    for (uint64_t j = 0; j < 8 && i + j < size; ++j) out[i + j] = static_cast<uint8_t>(v >> 8 * j);
  }
  return out;
}

mstar_tier_op_t Op(uint32_t kind, const mstar_tier_key_t& key, void* data, uint64_t size) {
  mstar_tier_op_t op{};
  op.struct_size = sizeof(op);
  op.struct_version = MSTAR_ABI_MINOR;
  op.kind = kind;
  op.result = 0xFFFFFFFFu;  // a value no tier writes, to show the tier did write it
  op.key = key;
  op.data = data;
  op.size = size;
  op.device = DLDevice{kDLCPU, 0};
  return op;
}

Result<std::unique_ptr<TierHarness>> TierHarness::Create(const std::string& name,
                                                         const std::string& config_toml,
                                                         const std::string& identity) {
  Diagnostics diagnostics;
  auto table = ParseTomlText(config_toml, "tier.toml", &diagnostics);
  if (!table.has_value()) return InvalidArgument("bad test config: " + config_toml);
  Result<FactoryRef> factory = TierRegistry().Find(MSTAR_KIND_TIER, name);
  if (!factory.ok()) return factory.status();
  InstanceOptions options;
  options.name = name;
  options.config = std::make_shared<ConfigTree>(std::move(*table), "tier.toml", "config");
  options.checkpoint_identity.assign(identity.begin(), identity.end());
  auto instance = PluginInstance::Create(factory.value(), options);
  if (!instance.ok()) return instance.status();
  auto harness = std::unique_ptr<TierHarness>(new TierHarness());
  harness->instance_ = std::move(instance.value());
  harness->handle_.name = name;
  harness->handle_.vtable = harness->instance_->tier();
  harness->handle_.self = harness->instance_->self();
  return harness;
}

std::vector<uint32_t> TierHarness::Run(std::vector<mstar_tier_op_t>& ops, mstar_stream_t* stream) {
  const mstar_host_api_t* h = host();
  mstar_tier_batch_t* batch = nullptr;
  Status submitted = TakeStatus(
      h->tier_submit(&handle_, ops.data(), static_cast<uint32_t>(ops.size()), stream, &batch));
  EXPECT_TRUE(submitted.ok()) << submitted.ToString();
  if (!submitted.ok()) return {};
  Status waited = TakeStatus(h->tier_wait(&handle_, batch, UINT64_MAX));
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  uint32_t done = 0;
  EXPECT_TRUE(TakeStatus(h->tier_poll(&handle_, batch, &done)).ok());
  EXPECT_EQ(done, 1u);
  h->tier_release_batch(&handle_, batch);
  std::vector<uint32_t> results;
  for (const mstar_tier_op_t& op : ops) results.push_back(op.result);
  return results;
}

uint32_t TierHarness::Put(uint64_t key, const std::vector<uint8_t>& bytes) {
  std::vector<mstar_tier_op_t> ops = {
      Op(MSTAR_TIER_OP_PUT, KeyOf(key), const_cast<uint8_t*>(bytes.data()), bytes.size())};
  return Run(ops).at(0);
}

uint32_t TierHarness::Get(uint64_t key, std::vector<uint8_t>& out) {
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_GET, KeyOf(key), out.data(), out.size())};
  return Run(ops).at(0);
}

uint32_t TierHarness::Contains(uint64_t key) {
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_CONTAINS, KeyOf(key))};
  return Run(ops).at(0);
}

uint32_t TierHarness::Remove(uint64_t key) {
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_REMOVE, KeyOf(key))};
  return Run(ops).at(0);
}

mstar_tier_info_t TierHarness::Info() {
  mstar_tier_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  Status s = TakeStatus(host()->tier_info(&handle_, &info));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return info;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

size_t CountContaining(const std::string& dir, const std::string& text) {
  size_t n = 0;
  for (const std::string& name : ListDir(dir)) n += name.find(text) != std::string::npos;
  return n;
}

}  // namespace mstar::test
