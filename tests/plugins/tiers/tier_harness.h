// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// TierHarness: one tier instance made by the real loader from the built tier_host / tier_disk
// plugins, called the way resources call tiers (through the host's tier services).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host/host_objects.h"
#include "plugin/instance.h"
#include "plugin/registry.h"

namespace mstar::test {

// The registry holding both tier plugins, loaded once per test binary.
const PluginRegistry& TierRegistry();

mstar_tier_key_t KeyOf(uint64_t n);
// size bytes derived from seed.
std::vector<uint8_t> Pattern(uint64_t size, uint64_t seed);

mstar_tier_op_t Op(uint32_t kind, const mstar_tier_key_t& key, void* data = nullptr,
                   uint64_t size = 0);

class TierHarness {
 public:
  // Creates tier `name` with the TOML config text; the status is the create error, if any.
  static Result<std::unique_ptr<TierHarness>> Create(const std::string& name,
                                                     const std::string& config_toml,
                                                     const std::string& identity = "");

  // Submits ops as one batch (device copies ordered on stream; NULL: synchronous), waits for it
  // and releases it; returns the results in order.
  std::vector<uint32_t> Run(std::vector<mstar_tier_op_t>& ops, mstar_stream_t* stream = nullptr);
  // One-op conveniences.
  uint32_t Put(uint64_t key, const std::vector<uint8_t>& bytes);
  uint32_t Get(uint64_t key, std::vector<uint8_t>& out);
  uint32_t Contains(uint64_t key);
  uint32_t Remove(uint64_t key);
  mstar_tier_info_t Info();

  mstar_tier_handle_t* handle() { return &handle_; }
  const mstar_host_api_t* host() const { return instance_->host(); }
  mstar_host_context_t* context() const { return instance_->context(); }

 private:
  std::unique_ptr<PluginInstance> instance_;
  mstar_tier_handle_t handle_;
};

// The names of the files in dir (empty when dir does not exist).
std::vector<std::string> ListDir(const std::string& dir);
// How many names in dir contain text.
size_t CountContaining(const std::string& dir, const std::string& text);

}  // namespace mstar::test
