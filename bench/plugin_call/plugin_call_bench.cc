// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What the plugin boundary costs, each figure beside the same work done without it in the same
// run:
//   abi.hook_call          a plugin hook through the C ABI and the SDK barrier, vs a direct C++
//                          virtual call doing the same work
//   host.tensor_lifecycle  tensor_alloc + map append + lookup + release through the host table,
//                          vs malloc/free of the same bytes
//   manifest.parse         parsing and validating a plugin manifest, vs parsing the TOML alone
//   loader.load            manifest + checks + dlopen + negotiation + table checks of a plugin,
//                          vs dlopen + dlsym + calling the entry by hand
#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/bench.h"
#include "config/toml_reader.h"
#include "core/logging.h"
#include "plugin/instance.h"
#include "plugin/registry.h"

namespace mstar {
namespace {

// The same body as kit_add's MaxBatchSize, called directly.
class DirectHook {
 public:
  virtual ~DirectHook() = default;
  virtual uint32_t MaxBatchSize(const char* walk) { return walk[0] == 'd' ? max_ : 0; }
  uint32_t max_ = 4;
};

void BenchHookCall(const PluginRegistry& registry) {
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_SUBMODULE, "kit_add");
  MSTAR_CHECK(factory.ok());
  InstanceOptions options;
  options.name = "bench";
  auto instance = PluginInstance::Create(factory.value(), options);
  MSTAR_CHECK(instance.ok());
  PluginInstance& sub = *instance.value();
  const mstar_submodule_vtable_t* table = sub.submodule();
  uint32_t out = 0;
  auto through_abi = [&] {
    Status s = CallPlugin(sub, "max_batch_size",
                          [&] { return table->max_batch_size(sub.self(), "decode", &out); });
    bench::DoNotOptimize(s.ok());
    bench::DoNotOptimize(out);
  };
  volatile DirectHook* keep = new DirectHook();
  DirectHook* direct = const_cast<DirectHook*>(keep);
  auto baseline = [&] {
    uint32_t v = direct->MaxBatchSize("decode");
    bench::DoNotOptimize(v);
  };
  auto [abi, base] = bench::SideBySide(through_abi, baseline);
  delete direct;
  bench::Emit({"abi.hook_call", abi, "ns/call", base, "figure <= 10 ns/call"});
}

void BenchTensorLifecycle() {
  HostApi host("bench");
  const mstar_host_api_t* api = host.table();
  const int64_t shape[2] = {16, 64};
  const DLDataType f32{kDLFloat, 32, 1};
  auto through_host = [&] {
    mstar_tensor_map_t* map = nullptr;
    mstar_tensor_t* t = nullptr;
    api->tensor_map_new(&map);
    api->tensor_alloc(host.library_context(), DLDevice{kDLCPU, 0}, f32, 2, shape, &t);
    api->tensor_map_append(map, "logits", t);
    bench::DoNotOptimize(api->tensor_map_get(map, "logits", 0));
    api->tensor_map_release(map);
  };
  auto baseline = [&] {
    void* p = std::aligned_alloc(256, 16 * 64 * 4);
    bench::DoNotOptimize(p);
    std::free(p);
  };
  auto [figure, base] = bench::SideBySide(through_host, baseline);
  bench::Emit({"host.tensor_lifecycle", figure, "ns/tensor", base, "figure <= 1000 ns/tensor"});
}

void BenchManifestParse(const std::string& manifest_path) {
  std::ifstream in(manifest_path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  MSTAR_CHECK(!text.empty());
  auto validate = [&] {
    ManifestParse parse = ParsePluginManifestText(text, manifest_path);
    bench::DoNotOptimize(parse.manifest.has_value());
  };
  auto toml_only = [&] {
    Diagnostics d;
    auto table = ParseTomlText(text, manifest_path, &d);
    bench::DoNotOptimize(table.has_value());
  };
  auto [figure, base] = bench::SideBySide(validate, toml_only);
  bench::Emit({"manifest.parse", figure / 1000, "us/manifest", base / 1000, "ratio <= 3"});
}

void BenchLoad(const std::string& plugin_dir) {
  std::string manifest_path = plugin_dir + "/template.toml";
  ManifestParse parse = ParsePluginManifestFile(manifest_path);
  MSTAR_CHECK(parse.manifest.has_value());
  const PluginManifest manifest = *parse.manifest;
  auto full_load = [&] {
    Diagnostic error;
    auto library = PluginLibrary::Load(manifest, LoadOptions{}, &error);
    MSTAR_CHECK(library != nullptr);
  };
  HostApi host("template");
  auto by_hand = [&] {
    void* handle = dlopen(manifest.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    MSTAR_CHECK(handle != nullptr);
    auto entry = reinterpret_cast<mstar_plugin_entry_fn>(dlsym(handle, MSTAR_PLUGIN_ENTRY_SYMBOL));
    mstar_negotiation_t n{sizeof(n), 0, MSTAR_ABI_MAJOR, MSTAR_ABI_MINOR, 0, 0, 0, 0};
    const mstar_plugin_api_t* api = nullptr;
    MSTAR_CHECK(entry(host.table(), &n, &api) == nullptr);
    dlclose(handle);
  };
  auto [figure, base] = bench::SideBySide(full_load, by_hand);
  bench::Emit({"loader.load", figure / 1000, "us/plugin", base / 1000, "figure <= 1000 us/plugin"});
}

}  // namespace
}  // namespace mstar

int main() {
  mstar::Log().set_level(spdlog::level::warn);
  std::cerr << "plugin_call_bench\n";
  mstar::PluginRegistry::Options options;
  options.discovery.plugin_paths = {MSTAR_BENCH_KIT_DIR};
  options.discovery.use_environment = false;
  options.discovery.use_install_dir = false;
  mstar::PluginRegistry registry = mstar::PluginRegistry::Load(options);
  if (registry.loaded().empty()) {
    std::cerr << "plugin_call_bench: the kit test plugin is not built (" << MSTAR_BENCH_KIT_DIR
              << ")\n";
    return 1;
  }
  mstar::BenchHookCall(registry);
  mstar::BenchTensorLifecycle();
  mstar::BenchManifestParse(std::string(MSTAR_BENCH_TEMPLATE_DIR) + "/template.toml");
  mstar::BenchLoad(MSTAR_BENCH_TEMPLATE_DIR);
  return 0;
}
