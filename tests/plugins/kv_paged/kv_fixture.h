// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Driving the kv_paged resource through its real ABI table: the plugin and the kit_memory tier
// are loaded from the build tree by the real loader; requests and step declarations are built
// the way the engine builds them. A FaultyTier wraps a real tier handle and can make every GET
// report DATA_LOSS or NOT_FOUND, as a tier that lost its blocks would, refuse PUTs, and fail
// REMOVEs.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/tensor_objects.h"
#include "plugin/instance.h"
#include "support/test_support.h"

namespace mstar::kvtest {

using Tokens = std::vector<int32_t>;

// A request as the engine describes it to resources.
struct FakeRequest {
  explicit FakeRequest(mstar_request_id_t id, const std::string& params_toml = "",
                       const std::string& tenant_salt = "");
  // A request whose steps add token_ids, in order from position 0 (KvTest::Step hands each
  // step the next ones as the host's input_tokens, while that many remain).
  FakeRequest(mstar_request_id_t id, Tokens token_ids, const std::string& tenant_salt = "");
  FakeRequest(const FakeRequest&) = delete;
  FakeRequest& operator=(const FakeRequest&) = delete;
  std::shared_ptr<const ConfigTree> params;
  std::string salt;
  mstar_request_info_t info{};
  Tokens tokens;
  size_t fed = 0;       // tokens the committed steps took
  int64_t written = 0;  // tokens Moving::Fill wrote K/V for (what Moving::Verify expects held)
};

// A tier handle around a real tier instance that can lose its blocks on read.
struct FaultyTier {
  // kSubmitFails: a batch of GETs fails as a whole (the tier's submit returns an I/O error).
  enum Mode { kHealthy, kDataLoss, kNotFound, kSubmitFails };
  explicit FaultyTier(PluginInstance* real);
  static mstar_status_t* Submit(void* self, mstar_tier_op_t* ops, uint32_t count,
                                mstar_stream_t* stream, mstar_tier_batch_t** out_batch);
  PluginInstance* real;
  Mode mode = kHealthy;
  uint32_t healthy_gets = 0;  // GETs that pass before the mode applies
  // With refuse_puts, PUTs report RESOURCE_EXHAUSTED and the real tier never sees them: the
  // first healthy_puts pass, then refusals are refused, then PUTs pass again.
  bool refuse_puts = false;
  uint32_t healthy_puts = 0;
  uint32_t refusals = UINT32_MAX;
  // A batch of PUTs fails as a whole (the tier's submit returns an I/O error).
  bool fail_put_batches = false;
  // Not MSTAR_OK: REMOVEs report it and the block stays (a disk tier's unlink failing).
  uint32_t remove_result = MSTAR_OK;
  std::vector<const void*> put_data, get_data;  // every PUT's (GET's) op.data, in order
  mstar_tier_vtable_t vtable{};
  mstar_tier_handle_t handle;
};

// What a single-request probe step shows of a request: its block table row and length.
struct Held {
  std::vector<int32_t> pages;
  int32_t len = 0;
};

class KvTest : public ::testing::Test {
 protected:
  // A kv_paged instance with config (TOML body of the resource's config table) over tiers, owned
  // by the fixture (destroyed after the last view, which shares its pool).
  PluginInstance* MakeKv(const std::string& config, std::vector<mstar_tier_handle_t*> tiers = {},
                         const std::string& checkpoint = "ckpt-a",
                         DLDevice device = DLDevice{kDLCPU, 0});
  // A tier of the named plugin (kit_memory: host blocks, copies host memory only; tier_host)
  // with config (TOML body of its config table), and its handle, kept alive by the fixture.
  mstar_tier_handle_t* MakeTier(const std::string& plugin = "kit_memory",
                                const std::string& config = "");
  // A FaultyTier around a tier of the named plugin.
  FaultyTier* MakeFaultyTier(const std::string& plugin = "kit_memory");

  static const mstar_resource_vtable_t* T(PluginInstance* kv) { return kv->resource(); }
  static Status Add(PluginInstance* kv, FakeRequest& r);
  // The tier's info().used_bytes.
  static uint64_t TierUsed(mstar_tier_handle_t* tier);

  // One step: declare, admit each request; when every admission is READY, plan and commit with
  // succeeded (default all). A request with tokens left gets its next ones as input_tokens. Returns each admission's outcome (MSTAR_ADMIT_UNSERVABLE when admit
  // failed, with the message in *error). The view is kept in last_view_.
  std::vector<uint32_t> Step(PluginInstance* kv, const std::vector<FakeRequest*>& requests,
                             const std::vector<uint32_t>& tokens,
                             const std::vector<uint8_t>& succeeded = {},
                             std::string* error = nullptr,
                             std::vector<uint64_t>* short_by = nullptr, bool abort_instead = false);
  // The request's pages and length (a zero-token step, planned and aborted).
  Held Probe(PluginInstance* kv, FakeRequest& r);
  mstar_resource_stats_t Stats(PluginInstance* kv);

  static std::vector<int32_t> I32(const mstar_tensor_map& view, const std::string& name);
  static std::vector<int64_t> I64(const mstar_tensor_map& view, const std::string& name);
  static const mstar_tensor_t* Get(const mstar_tensor_map& view, const std::string& name);

  std::unique_ptr<PluginRegistry> registry_ = std::make_unique<PluginRegistry>(test::LoadOnly(
      {std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/kv_paged",
       std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins/tier_host", test::TestPluginDir("kit")}));
  std::vector<std::unique_ptr<PluginInstance>> tiers_;
  std::vector<std::unique_ptr<mstar_tier_handle_t>> handles_;
  std::vector<std::unique_ptr<FaultyTier>> faulty_;
  std::vector<std::unique_ptr<PluginInstance>> kvs_;
  TensorMapPtr last_view_;
};

}  // namespace mstar::kvtest
