// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Rules for tiers: put/get/contains/remove round trips byte-exact, missing keys answer NOT_FOUND,
// and a bounded tier never holds more than its capacity.
#include <cstring>
#include <random>

#include "rule_context.h"

namespace mstar::conformance {
namespace {

class TierDriver {
 public:
  explicit TierDriver(PluginInstance& instance) : instance_(instance) {}

  // Runs ops as one batch to completion; returns each op's result.
  std::vector<uint32_t> Run(std::vector<mstar_tier_op_t>& ops) {
    const mstar_tier_vtable_t* t = instance_.tier();
    mstar_tier_batch_t* batch = nullptr;
    RequireOk(CallPlugin(instance_, "submit",
                         [&] {
                           return t->submit(instance_.self(), ops.data(),
                                            static_cast<uint32_t>(ops.size()), nullptr, &batch);
                         }),
              "submit");
    Require(batch != nullptr, "submit succeeded without a batch handle");
    RequireOk(
        CallPlugin(instance_, "wait", [&] { return t->wait(instance_.self(), batch, UINT64_MAX); }),
        "wait");
    uint32_t done = 0;
    RequireOk(
        CallPlugin(instance_, "poll", [&] { return t->poll(instance_.self(), batch, &done); }),
        "poll");
    Require(done != 0, "poll says not done after wait returned OK");
    std::vector<uint32_t> results;
    for (const mstar_tier_op_t& op : ops) results.push_back(op.result);
    CallPluginVoid(instance_, "release", [&] { t->release(instance_.self(), batch); });
    return results;
  }
  mstar_tier_info_t Info() {
    mstar_tier_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, 0, 0};
    RequireOk(CallPlugin(instance_, "info",
                         [&] { return instance_.tier()->info(instance_.self(), &info); }),
              "info");
    return info;
  }

 private:
  PluginInstance& instance_;
};

mstar_tier_op_t Op(uint32_t kind, uint8_t key, void* data, uint64_t size) {
  mstar_tier_op_t op{};
  op.struct_size = sizeof(op);
  op.struct_version = MSTAR_ABI_MINOR;
  op.kind = kind;
  op.result = UINT32_MAX;
  std::memset(op.key.bytes, 0, sizeof(op.key.bytes));
  op.key.bytes[0] = key;
  op.key.bytes[31] = 0xA5;
  op.data = data;
  op.size = size;
  op.device = DLDevice{kDLCPU, 0};
  return op;
}

void RoundTrip(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  TierDriver d(*instance);
  std::mt19937 rng(3);
  const std::vector<uint64_t> sizes = {1, 100, 4096, 65536 + 7};
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<mstar_tier_op_t> puts;
  for (size_t i = 0; i < sizes.size(); ++i) {
    blocks.emplace_back(sizes[i]);
    for (uint8_t& b : blocks.back()) b = static_cast<uint8_t>(rng());
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    puts.push_back(Op(MSTAR_TIER_OP_PUT, static_cast<uint8_t>(i + 1), blocks[i].data(), sizes[i]));
  for (uint32_t r : d.Run(puts))
    Require(r == MSTAR_OK, "a PUT of a small block failed with code " + std::to_string(r));
  std::vector<mstar_tier_op_t> checks;
  std::vector<std::vector<uint8_t>> read(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    read[i].assign(sizes[i], 0);
    checks.push_back(Op(MSTAR_TIER_OP_CONTAINS, static_cast<uint8_t>(i + 1), nullptr, 0));
    checks.push_back(Op(MSTAR_TIER_OP_GET, static_cast<uint8_t>(i + 1), read[i].data(), sizes[i]));
  }
  std::vector<uint32_t> results = d.Run(checks);
  for (size_t i = 0; i < sizes.size(); ++i) {
    Require(results[2 * i] == MSTAR_OK, "CONTAINS of a block just put is not OK");
    Require(results[2 * i + 1] == MSTAR_OK,
            "GET of a block just put failed with code " + std::to_string(results[2 * i + 1]));
    Require(read[i] == blocks[i],
            "GET returned different bytes for a block of " + std::to_string(sizes[i]) + " bytes");
  }
  std::vector<mstar_tier_op_t> removes = {Op(MSTAR_TIER_OP_REMOVE, 1, nullptr, 0)};
  Require(d.Run(removes)[0] == MSTAR_OK, "REMOVE of a present block is not OK");
  std::vector<mstar_tier_op_t> gone = {Op(MSTAR_TIER_OP_CONTAINS, 1, nullptr, 0)};
  Require(d.Run(gone)[0] == MSTAR_ERR_NOT_FOUND, "CONTAINS after REMOVE is not NOT_FOUND");
}

void MissingKeys(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  TierDriver d(*instance);
  std::vector<uint8_t> buffer(64, 0x5A);
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_CONTAINS, 200, nullptr, 0),
                                      Op(MSTAR_TIER_OP_GET, 200, buffer.data(), buffer.size()),
                                      Op(MSTAR_TIER_OP_REMOVE, 200, nullptr, 0)};
  std::vector<uint32_t> results = d.Run(ops);
  const char* names[] = {"CONTAINS", "GET", "REMOVE"};
  for (size_t i = 0; i < results.size(); ++i) {
    Require(results[i] == MSTAR_ERR_NOT_FOUND, std::string(names[i]) +
                                                   " of a missing key answered " +
                                                   std::to_string(results[i]) + ", not NOT_FOUND");
  }
  Require(buffer == std::vector<uint8_t>(64, 0x5A), "a GET that failed wrote into the destination");
}

void Capacity(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  TierDriver d(*instance);
  mstar_tier_info_t info = d.Info();
  if (info.capacity_bytes == 0) Skip("unbounded tier (capacity_bytes 0)");
  constexpr uint64_t kMostBlockBytes = uint64_t{64} << 20;  // 8 PUTs fill 4x the capacity
  if (info.capacity_bytes / 4 > kMostBlockBytes) {
    Skip("capacity_bytes " + std::to_string(info.capacity_bytes) +
         " is more than this rule fills (256 MiB); give the tier a smaller one in its "
         "conformance config");
  }
  uint64_t block = std::max<uint64_t>(1, info.capacity_bytes / 4);
  // Each block its own bytes, so a GET that hands back another key's block shows.
  auto payload = [&](int i) { return std::vector<uint8_t>(block, static_cast<uint8_t>(7 + i)); };
  for (int i = 0; i < 8; ++i) {
    std::vector<uint8_t> data = payload(i);
    std::vector<mstar_tier_op_t> put = {
        Op(MSTAR_TIER_OP_PUT, static_cast<uint8_t>(100 + i), data.data(), block)};
    uint32_t r = d.Run(put)[0];
    Require(r == MSTAR_OK || r == MSTAR_ERR_RESOURCE_EXHAUSTED,
            "a PUT beyond the capacity answered " + std::to_string(r) +
                ": evict or answer RESOURCE_EXHAUSTED");
    mstar_tier_info_t now = d.Info();
    Require(now.used_bytes <= now.capacity_bytes,
            "the tier holds " + std::to_string(now.used_bytes) + " bytes of a capacity of " +
                std::to_string(now.capacity_bytes));
  }
  // What the tier says it holds is checked against what it answers: the blocks CONTAINS finds
  // fit in the capacity, and each GET gives that key's own bytes.
  uint64_t held = 0;
  for (int i = 0; i < 8; ++i) {
    const auto key = static_cast<uint8_t>(100 + i);
    std::vector<mstar_tier_op_t> contains = {Op(MSTAR_TIER_OP_CONTAINS, key, nullptr, 0)};
    const uint32_t found = d.Run(contains)[0];
    if (found == MSTAR_ERR_NOT_FOUND) continue;
    Require(found == MSTAR_OK, "CONTAINS answered " + std::to_string(found));
    held += block;
    std::vector<uint8_t> got(block, 0);
    std::vector<mstar_tier_op_t> get = {Op(MSTAR_TIER_OP_GET, key, got.data(), block)};
    const uint32_t r = d.Run(get)[0];
    Require(r == MSTAR_OK, "GET of a block CONTAINS finds answered " + std::to_string(r));
    Require(got == payload(i), "GET of block " + std::to_string(i) +
                                   " after the tier filled up gave other bytes than its PUT");
  }
  Require(held <= info.capacity_bytes, "CONTAINS finds " + std::to_string(held) +
                                           " bytes of blocks in a tier of " +
                                           std::to_string(info.capacity_bytes) + " bytes");
}

}  // namespace

std::vector<Rule> TierRules() {
  return {
      {{"tier.round-trip", "tier", "PUT, CONTAINS, GET and REMOVE round trip blocks byte-exact"},
       RoundTrip},
      {{"tier.missing-keys", "tier",
        "Operations on a missing key answer NOT_FOUND and write nothing"},
       MissingKeys},
      {{"tier.capacity", "tier",
        "A bounded tier never holds more than its capacity, by what it reports and by the "
        "blocks CONTAINS finds, and each block it kept reads back its own bytes"},
       Capacity},
  };
}

}  // namespace mstar::conformance
