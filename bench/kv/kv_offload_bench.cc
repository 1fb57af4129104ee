// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// kv_paged's offload and reload through tier_host, each beside its ceiling measured in the same
// run on the same bytes (one memcpy of everything the round trip moves, out of the pool and back
// into it), and, for scale, beside a memcpy per page between the same pool pages and blocks of
// their own (what moving a page at a time costs on this CPU: glibc copies one large buffer with
// non-temporal stores, 512 KiB blocks without, which on many machines is most of the gap):
//   kv_paged.offload.scattered / .reload.scattered    256 pages, every other page of the pool
//                                                     (no two back to back: a copy per page)
//   kv_paged.offload.contiguous / .reload.contiguous  256 pages in a row (tier_host moves them
//                                                     as one run)
// The pool is in host memory, as on a CPU build (the GPU figure comes from kv_paged_gpu_test
// through scripts/device_check.sh): tiny_lm's large layout, 8 layers, 8 KV heads of 64, 16-token
// pages of 512 KiB, so a round trip moves 128 MiB. Each figure is the best of a few alternating
// rounds. The plugins are found beside the binary's build tree: build kv_paged and tier_host
// first.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/bench.h"
#include "common/built_plugins.h"
#include "config/toml_reader.h"
#include "core/logging.h"
#include "host/host_api.h"
#include "host/tensor_objects.h"
#include "plugin/instance.h"
#include "plugin/registry.h"
#include "plugin/step_arrays.h"

namespace mstar {
namespace {

constexpr int kLayers = 8, kHeads = 8, kDim = 64, kPageSize = 16;
constexpr int kPages = 512, kRequestPages = 256;
constexpr uint64_t kPageBytes = uint64_t{kLayers} * 2 * kPageSize * kHeads * kDim * sizeof(float);
constexpr uint64_t kMoved = kPageBytes * kRequestPages;
constexpr int kRounds = 5;

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "kv_offload_bench: " << what << "\n";
  std::exit(1);
}

void Require(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

std::shared_ptr<const ConfigTree> Tree(const std::string& text, const char* path) {
  Diagnostics d;
  auto table = ParseTomlText(text, path, &d);
  if (!table.has_value()) Die(JoinDiagnostics(d));
  return std::make_shared<ConfigTree>(std::move(*table), path, "config");
}

std::unique_ptr<PluginInstance> Make(const PluginRegistry& registry, uint32_t kind,
                                     const char* name, const std::string& config,
                                     std::vector<mstar_tier_handle_t*> tiers = {}) {
  Result<FactoryRef> factory = registry.Find(kind, name);
  if (!factory.ok()) Die(factory.status().ToString());
  InstanceOptions options;
  options.name = name;
  options.config = Tree(config, "kv_offload_bench.toml");
  options.tiers = std::move(tiers);
  options.checkpoint_identity = {'b', 'e', 'n', 'c', 'h'};
  auto instance = PluginInstance::Create(factory.value(), options);
  if (!instance.ok()) Die(instance.status().ToString());
  return std::move(instance.value());
}

// One request as the engine describes it to a resource.
struct Request {
  explicit Request(mstar_request_id_t id) : params(Tree("", "params.toml")) {
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = id;
    info.walk = "decode";
    info.partition = "default";
    info.params = params->root();
  }
  std::shared_ptr<const ConfigTree> params;
  mstar_request_info_t info{};
};

// A kv_paged pool in host memory over one tier_host, driven through the resource's ABI table.
class Cache {
 public:
  explicit Cache(const PluginRegistry& registry)
      : tier_(Make(registry, MSTAR_KIND_TIER, "tier_host", "")) {
    handle_.name = "tier_host";
    handle_.vtable = tier_->tier();
    handle_.self = tier_->self();
    const std::string config =
        "page_size = " + std::to_string(kPageSize) + "\nnum_pages = " + std::to_string(kPages) +
        "\nlayers = " + std::to_string(kLayers) + "\nkv_heads = " + std::to_string(kHeads) +
        "\nhead_dim = " + std::to_string(kDim) + "\n";
    kv_ = Make(registry, MSTAR_KIND_RESOURCE, "kv_paged", config, {&handle_});
  }

  void Add(Request& r) { Require(TakeStatus(t()->add_request(self(), &r.info)), "add_request"); }

  // One step of tokens[i] new tokens for requests[i]: declare, admit (each must be ready), plan,
  // commit. Keeps the view, whose kv_pool is the pool.
  void Step(const std::vector<Request*>& requests, const std::vector<uint32_t>& tokens) {
    StepArrays arrays;
    for (size_t i = 0; i < requests.size(); ++i)
      arrays.Add(&requests[i]->info, nullptr, tokens[i], nullptr);
    const mstar_step_decl_t decl = arrays.Decl("lm", "decode");
    Require(TakeStatus(t()->declare(self(), &decl)), "declare");
    for (uint32_t i = 0; i < decl.num_requests; ++i) {
      mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
      Require(TakeStatus(t()->admit(self(), &decl, i, &admit)), "admit");
      if (admit.outcome != MSTAR_ADMIT_READY) Die("a step was not admitted");
    }
    view_ = NewTensorMap();
    Require(TakeStatus(t()->plan(self(), &decl, view_.get(), nullptr)), "plan");
    std::vector<uint8_t> ok(decl.num_requests, 1);
    Require(TakeStatus(t()->commit(self(), &decl, ok.data(), nullptr)), "commit");
  }

  uint8_t* pool() const {
    const mstar_tensor_map::Entry* e = view_->Find("kv_pool");
    if (e == nullptr) Die("the view has no kv_pool");
    return static_cast<uint8_t*>(e->tensors.front()->dl.data);
  }

  void Offload(mstar_request_id_t id) {
    uint64_t reclaimed = 0;
    Require(TakeStatus(t()->offload(self(), id, 0, nullptr, &reclaimed)), "offload");
    if (reclaimed != kRequestPages) Die("offload moved " + std::to_string(reclaimed) + " pages");
  }
  void Reload(mstar_request_id_t id) {
    uint32_t done = 0;
    Require(TakeStatus(t()->reload(self(), id, nullptr, &done)), "reload");
    if (done != 1) Die("reload did not complete");
  }

 private:
  const mstar_resource_vtable_t* t() const { return kv_->resource(); }
  void* self() const { return kv_->self(); }

  std::unique_ptr<PluginInstance> tier_;
  mstar_tier_handle_t handle_{};
  std::unique_ptr<PluginInstance> kv_;
  TensorMapPtr view_;  // before kv_ in destruction: it shares the pool
};

double Seconds(const std::function<void()>& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Offload and reload of request 1 (kRequestPages pages) beside memcpy of the same bytes between
// the pool and a buffer, and beside a memcpy per page, best of kRounds alternating rounds; emits
// the four rows.
void Measure(const PluginRegistry& registry, bool scattered) {
  Cache cache(registry);
  Request a(1), b(2);
  cache.Add(a);
  if (scattered) {
    cache.Add(b);  // b takes every other page and keeps them
    for (int i = 0; i < kRequestPages; ++i) cache.Step({&a, &b}, {kPageSize, kPageSize});
  } else {
    cache.Step({&a}, {kPageSize * kRequestPages});
  }
  uint8_t* pool = cache.pool();
  std::vector<uint8_t> buffer(kMoved, 1);
  std::vector<std::vector<uint8_t>> blocks(kRequestPages, std::vector<uint8_t>(kPageBytes, 1));
  const uint64_t stride = kPageBytes * (scattered ? 2 : 1);  // every other page, as request 1
  auto per_page = [&](bool out) {
    for (uint64_t i = 0; i < kRequestPages; ++i) {
      uint8_t* page = pool + i * stride;
      if (out) std::memcpy(blocks[i].data(), page, kPageBytes);
      if (!out) std::memcpy(page, blocks[i].data(), kPageBytes);
    }
  };
  double offload = 1e30, reload = 1e30, out = 1e30, in = 1e30, pages_out = 1e30, pages_in = 1e30;
  for (int round = 0; round < kRounds; ++round) {
    offload = std::min(offload, Seconds([&] { cache.Offload(1); }));
    out = std::min(out, Seconds([&] { std::memcpy(buffer.data(), pool, kMoved); }));
    pages_out = std::min(pages_out, Seconds([&] { per_page(true); }));
    reload = std::min(reload, Seconds([&] { cache.Reload(1); }));
    in = std::min(in, Seconds([&] { std::memcpy(pool, buffer.data(), kMoved); }));
    pages_in = std::min(pages_in, Seconds([&] { per_page(false); }));
    bench::DoNotOptimize(buffer[kMoved - 1]);
    bench::DoNotOptimize(blocks[0][0]);
  }
  const double gb = static_cast<double>(kMoved) / 1e9;
  const std::string layout = scattered ? "scattered" : "contiguous";
  bench::Emit({"kv_paged.offload." + layout, gb / offload, "GB/s", gb / out,
               "ratio >= 0.8 (one memcpy of the same bytes out of the pool)"});
  bench::Emit({"kv_paged.reload." + layout, gb / reload, "GB/s", gb / in,
               "ratio >= 0.8 (one memcpy of the same bytes into the pool)"});
  const char* scale = "for scale: a memcpy per page, between its pool page and a block of its own";
  bench::Emit(
      {"kv_paged.offload." + layout + ".per_page", gb / offload, "GB/s", gb / pages_out, scale});
  bench::Emit(
      {"kv_paged.reload." + layout + ".per_page", gb / reload, "GB/s", gb / pages_in, scale});
}

}  // namespace
}  // namespace mstar

int main() {
  using namespace mstar;
  Log().set_level(spdlog::level::warn);
  PluginRegistry registry = bench::LoadBuiltPlugins({"kv_paged", "tier_host"});
  std::cerr << "kv_offload_bench: " << kRequestPages << " pages of " << (kPageBytes >> 10)
            << " KiB per round trip, pool in host memory\n";
  for (bool scattered : {true, false}) Measure(registry, scattered);
  return 0;
}
