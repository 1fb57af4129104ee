// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A deliberately minimal plugin written against the raw C ABI (no SDK), compiled once per fault:
// each build shows exactly one way a plugin can be wrong, and the loader tests check that the
// runtime refuses it with the right message. FAULT selects the fault; PLUGIN_NAME and
// FACTORY_NAME name the plugin and its one submodule.
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "mstar/plugin.h"

#define FAULT_NONE 0            // a correct plugin (used for the duplicate-name pair)
#define FAULT_NO_ENTRY 1        // exports a misspelled entry symbol
#define FAULT_MAJOR2 2          // built for ABI major 2
#define FAULT_NEEDS_MINOR3 3    // needs host minor 3 (its manifest claims 0)
#define FAULT_ENTRY_ERROR 4     // the entry returns an error
#define FAULT_ENTRY_THROWS 5    // the entry throws a C++ exception (no SDK barrier)
#define FAULT_NO_FORWARD 6      // the submodule table lacks the required forward slot
#define FAULT_WRONG_NAME 7      // the library calls itself something else than the manifest
#define FAULT_EXTRA_FACTORY 8   // provides a factory the manifest does not list
#define FAULT_NO_NEGOTIATION 9  // succeeds without filling in the negotiation
#define FAULT_LAZY_SYMBOL 10    // references a symbol no library defines (never called)
// Links a library (lazy_dependency.cc) that references a symbol no library defines.
#define FAULT_LAZY_DEPENDENCY 31
#define FAULT_HUGE_BUCKET_COUNT 32   // a capture config saying 2^32 - 1 buckets (it has 2)
#define FAULT_ODD_FACTORY_STRIDE 33  // two factories, the first's struct_size not aligned
#define FAULT_STATIC_INIT_THROWS 34  // a static initializer throws while the library loads
// Links lazy_dependency.cc and itself references a symbol no library defines.
#define FAULT_LAZY_BOTH 35
// As FAULT_EXACT_MINOR, with a shutdown that appends a line to $MSTAR_TEST_SHUTDOWN_FILE.
#define FAULT_RECORDS_SHUTDOWN 36
#define FAULT_EXACT_MINOR 11         // refuses every host minor but 0 (even newer ones)
#define FAULT_OLD_COLUMNAR 12        // an ABI 1.0 plugin whose flags set the bit 1.1 calls columnar
#define FAULT_COLUMNAR_UNBATCHED 13  // declares columnar steps without a batched forward
#define FAULT_CLEANUP_THROWS 14      // cleanup_request throws a C++ exception (no SDK barrier)
#define FAULT_BAD_CAPTURE_CONFIG 15  // a capture config whose replay_walks holds a NULL walk
#define FAULT_NULL_CAPTURE_CONFIGS 16  // capture_configs gives count 1 and a NULL array
#define FAULT_NULL_BUCKETS 17          // a capture config with 2 buckets and a NULL bucket array
#define FAULT_NULL_STOP_OUTPUT 18      // info's stop_outputs holds a NULL name
#define FAULT_CLOBBERS_HOST_MINOR 19   // overwrites the host's minor with 9 and negotiates 9
#define FAULT_EXPANDED_OUTPUT 20       // forward outputs an expanded tensor (a stride of 0)
#define FAULT_WIDE_CAPTURE_CONFIGS 21  // two capture configs of a later minor's (larger) struct
#define FAULT_WIDE_FACTORIES 22        // two factories of a later minor's (larger) struct
// An ABI 1.2 plugin whose info writes 1.3's token_input and sets 1.4's MSTAR_SUBMODULE_FINAL_CHUNK.
#define FAULT_OLD_TOKEN_INPUT 23
#define FAULT_ENTRY_CRASHES 24        // the entry dies with SIGSEGV (as a null dereference would)
#define FAULT_STOP_BATCHED_ONLY 25    // fills check_stop_batched but not check_stop
#define FAULT_MANY_SLOTS 26           // a capture config asking for 65 slots per bucket
#define FAULT_HUGE_BUCKET 27          // a capture bucket of 2^20 requests
#define FAULT_HUGE_FACTORY_STRIDE 28  // two factories, the first saying struct_size 2^31
#define FAULT_HUGE_CONFIG_STRIDE 29   // two capture configs, the first saying struct_size 2^31
// A submodule table whose struct_size ends before check_stop_columnar (1.1's slot 17), with
// memory after it that is not NULL there: the host must not read it.
#define FAULT_SHORT_TABLE 30
// A region capture config with MSTAR_CAPTURE_SPLIT_BY_KEY (regions replay whatever the key).
#define FAULT_SPLIT_REGION 37

#ifndef FAULT
#error "define FAULT"
#endif

namespace {

const mstar_host_api_t* g_host = nullptr;  // set by the entry point

#if FAULT == FAULT_STATIC_INIT_THROWS
struct ThrowsWhenConstructed {
  ThrowsWhenConstructed() {
    throw std::runtime_error("deliberate exception from a static initializer");
  }
};
ThrowsWhenConstructed g_throws;
#endif

mstar_status_t* Create(const mstar_create_args_t* args, void** out_self) {
  (void)args;
  static int instance;
  *out_self = &instance;
  return nullptr;
}
void Destroy(void* self) {
  (void)self;
}
mstar_status_t* Info(void* self, mstar_submodule_info_t* out) {
  (void)self;
#if FAULT == FAULT_OLD_COLUMNAR
  out->flags = MSTAR_SUBMODULE_BATCHED | MSTAR_SUBMODULE_COLUMNAR;
#elif FAULT == FAULT_COLUMNAR_UNBATCHED
  out->flags = MSTAR_SUBMODULE_COLUMNAR;
#elif FAULT == FAULT_OLD_TOKEN_INPUT
  out->flags = MSTAR_SUBMODULE_FINAL_CHUNK;  // a bit its minor does not have
#else
  out->flags = 0;
#endif
#if FAULT == FAULT_OLD_TOKEN_INPUT
  out->token_input = "tokens";  // a field its minor does not have: the host must not read it
#endif
#if FAULT == FAULT_NULL_STOP_OUTPUT
  static const char* const kStopOutputs[] = {"tokens", nullptr};
  out->num_stop_outputs = 2;
  out->stop_outputs = kStopOutputs;
#else
  out->num_stop_outputs = 0;
  out->stop_outputs = nullptr;
#endif
  return nullptr;
}
mstar_status_t* Prepare(void* self, const mstar_request_info_t* request,
                        const mstar_tensor_map_t* inputs, mstar_prepared_t* out) {
  (void)self;
  (void)request;
  (void)inputs;
  out->num_tokens = 0;
  return nullptr;
}
#if FAULT == FAULT_LAZY_SYMBOL || FAULT == FAULT_LAZY_BOTH
extern "C" void mstar_test_symbol_defined_nowhere(void);
#endif
#if FAULT == FAULT_LAZY_DEPENDENCY || FAULT == FAULT_LAZY_BOTH
extern "C" void mstar_test_lazy_dependency(int call_the_missing_symbol);
#endif
#if FAULT == FAULT_EXPANDED_OUTPUT
// Output "tokens": one value seen four times (shape {4}, stride 0), as LibTorch's expand() gives.
mstar_status_t* AppendExpanded(mstar_tensor_map_t* outputs) {
  struct Expanded {
    int64_t value = 7;
    int64_t shape = 4;
    int64_t stride = 0;
    mstar_tensor_t t{};
  };
  auto* e = new Expanded;
  e->t.struct_size = sizeof(mstar_tensor_t);
  e->t.struct_version = MSTAR_TENSOR_VERSION;
  e->t.dlpack_major = MSTAR_DLPACK_MAJOR;
  e->t.dlpack_minor = MSTAR_DLPACK_MINOR;
  e->t.dl = DLTensor{&e->value, DLDevice{kDLCPU, 0}, 1, DLDataType{kDLInt, 64, 1},
                     &e->shape, &e->stride,          0};
  e->t.manager_ctx = e;
  e->t.deleter = [](mstar_tensor_t* t) { delete static_cast<Expanded*>(t->manager_ctx); };
  return g_host->tensor_map_append(outputs, "tokens", &e->t);
}
#endif

mstar_status_t* Forward(void* self, const mstar_step_t* step) {
  (void)self;
  (void)step;
#if FAULT == FAULT_LAZY_SYMBOL || FAULT == FAULT_LAZY_BOTH
  if (step == nullptr) mstar_test_symbol_defined_nowhere();
#endif
#if FAULT == FAULT_LAZY_DEPENDENCY || FAULT == FAULT_LAZY_BOTH
  if (step == nullptr) mstar_test_lazy_dependency(0);
#endif
#if FAULT == FAULT_EXPANDED_OUTPUT
  return AppendExpanded(step->outputs[0]);
#else
  return nullptr;
#endif
}

#if FAULT == FAULT_CLEANUP_THROWS
void CleanupRequest(void* self, mstar_request_id_t request_id) {
  (void)self;
  (void)request_id;
  throw std::runtime_error("deliberate exception from cleanup_request");
}
#endif

#if FAULT == FAULT_BAD_CAPTURE_CONFIG || FAULT == FAULT_NULL_CAPTURE_CONFIGS ||               \
    FAULT == FAULT_NULL_BUCKETS || FAULT == FAULT_MANY_SLOTS || FAULT == FAULT_HUGE_BUCKET || \
    FAULT == FAULT_HUGE_BUCKET_COUNT || FAULT == FAULT_SPLIT_REGION
mstar_status_t* CaptureConfigs(void* self, uint32_t* out_count,
                               const mstar_capture_config_t** out_configs) {
  (void)self;
  static const char* const kReplayWalks[] = {nullptr};
  static const mstar_capture_bucket_t kBuckets[] = {{1, 1}, {2, 2}};
  static mstar_capture_config_t config = [] {
    mstar_capture_config_t c{};
    c.struct_size = sizeof(c);
    c.capture_walk = "prefill";
    c.num_replay_walks = 1;
    c.replay_walks = kReplayWalks;
    c.num_buckets = 2;
    c.buckets = kBuckets;
#if FAULT == FAULT_NULL_BUCKETS || FAULT == FAULT_MANY_SLOTS || FAULT == FAULT_HUGE_BUCKET || \
    FAULT == FAULT_HUGE_BUCKET_COUNT || FAULT == FAULT_SPLIT_REGION
    static const char* const kWalks[] = {"prefill"};
    c.replay_walks = kWalks;
#endif
#if FAULT == FAULT_NULL_BUCKETS
    c.buckets = nullptr;
#elif FAULT == FAULT_MANY_SLOTS
    c.num_slots = 65;
#elif FAULT == FAULT_HUGE_BUCKET
    static const mstar_capture_bucket_t kHuge[] = {{1, 1}, {1u << 20, 1u << 20}};
    c.buckets = kHuge;
#elif FAULT == FAULT_HUGE_BUCKET_COUNT
    c.num_buckets = 0xFFFFFFFFu;
#elif FAULT == FAULT_SPLIT_REGION
    c.region = "mlp";
    c.flags = MSTAR_CAPTURE_SPLIT_BY_KEY;
#endif
    return c;
  }();
  *out_count = 1;
#if FAULT == FAULT_NULL_CAPTURE_CONFIGS
  *out_configs = nullptr;
#else
  *out_configs = &config;
#endif
  return nullptr;
}
#endif

#if FAULT == FAULT_WIDE_CAPTURE_CONFIGS
// What a plugin of a later minor returns: the struct grew by a field this host does not know.
struct WideCaptureConfig {
  mstar_capture_config_t config;
  uint64_t appended;
};
mstar_status_t* CaptureConfigs(void* self, uint32_t* out_count,
                               const mstar_capture_config_t** out_configs) {
  (void)self;
  static const char* const kWalks[] = {"prefill"};
  static const mstar_capture_bucket_t kBuckets[] = {{1, 1}, {2, 2}};
  static WideCaptureConfig configs[2] = {};
  for (uint32_t i = 0; i < 2; ++i) {
    mstar_capture_config_t& c = configs[i].config;
    c.struct_size = sizeof(WideCaptureConfig);
    c.capture_walk = "prefill";
    c.num_replay_walks = 1;
    c.replay_walks = kWalks;
    c.num_buckets = i + 1;
    c.buckets = kBuckets;
    c.capture_key = 7 + i;
    configs[i].appended = ~uint64_t{0};
  }
  *out_count = 2;
  *out_configs = &configs[0].config;
  return nullptr;
}
#endif

#if FAULT == FAULT_HUGE_CONFIG_STRIDE
mstar_status_t* CaptureConfigs(void* self, uint32_t* out_count,
                               const mstar_capture_config_t** out_configs) {
  (void)self;
  static mstar_capture_config_t configs[2] = {};
  configs[0].struct_size = 0x80000000u;
  configs[1].struct_size = 0x80000000u;
  *out_count = 2;
  *out_configs = configs;
  return nullptr;
}
#endif

#if FAULT == FAULT_SHORT_TABLE
mstar_status_t* CheckStopColumnar(void* self, const mstar_step_t* step,
                                  const mstar_tensor_map_t* host_outputs,
                                  const mstar_tensor_map_t* rows, uint64_t* out_stop_masks) {
  (void)self;
  (void)step;
  (void)host_outputs;
  (void)rows;
  (void)out_stop_masks;
  return nullptr;
}
#endif

#if FAULT == FAULT_STOP_BATCHED_ONLY
mstar_status_t* CheckStopBatched(void* self, uint32_t num_requests,
                                 const mstar_request_info_t* const* requests,
                                 const mstar_tensor_map_t* const* host_outputs,
                                 uint64_t* out_stop_masks) {
  (void)self;
  (void)requests;
  (void)host_outputs;
  for (uint32_t i = 0; i < num_requests; ++i) out_stop_masks[i] = 0;
  return nullptr;
}
#endif

mstar_submodule_vtable_t MakeTable() {
  mstar_submodule_vtable_t t{};
  t.struct_size = sizeof(t);
  t.create = &Create;
  t.destroy = &Destroy;
  t.info = &Info;
  t.prepare_inputs = &Prepare;
#if FAULT != FAULT_NO_FORWARD
  t.forward = &Forward;
#endif
#if FAULT == FAULT_OLD_COLUMNAR
  t.forward_batched = &Forward;
#endif
#if FAULT == FAULT_CLEANUP_THROWS
  t.cleanup_request = &CleanupRequest;
#endif
#if FAULT == FAULT_STOP_BATCHED_ONLY
  t.check_stop_batched = &CheckStopBatched;
#endif
#if FAULT == FAULT_BAD_CAPTURE_CONFIG || FAULT == FAULT_NULL_CAPTURE_CONFIGS || \
    FAULT == FAULT_NULL_BUCKETS || FAULT == FAULT_WIDE_CAPTURE_CONFIGS ||       \
    FAULT == FAULT_MANY_SLOTS || FAULT == FAULT_HUGE_BUCKET ||                  \
    FAULT == FAULT_HUGE_CONFIG_STRIDE || FAULT == FAULT_HUGE_BUCKET_COUNT ||    \
    FAULT == FAULT_SPLIT_REGION
  t.capture_configs = &CaptureConfigs;
#endif
#if FAULT == FAULT_SHORT_TABLE
  t.struct_size = offsetof(mstar_submodule_vtable_t, check_stop_columnar);
  t.check_stop_columnar = &CheckStopColumnar;  // past struct_size: not the plugin's slot
#endif
  return t;
}

mstar_submodule_vtable_t g_table = MakeTable();
#if FAULT == FAULT_WIDE_FACTORIES
// What a plugin of a later minor returns: the factory struct grew by a field this host does not
// know; the second factory is FACTORY_NAME "_2".
struct WideFactory {
  mstar_factory_t factory;
  uint64_t appended;
};
WideFactory g_wide[] = {
    {{sizeof(WideFactory), 0, MSTAR_KIND_SUBMODULE, 0, FACTORY_NAME, &g_table}, ~uint64_t{0}},
    {{sizeof(WideFactory), 0, MSTAR_KIND_SUBMODULE, 0, FACTORY_NAME "_2", &g_table}, ~uint64_t{0}},
};
mstar_factory_t* const g_factories = &g_wide[0].factory;
#elif FAULT == FAULT_ODD_FACTORY_STRIDE
mstar_factory_t g_factories[] = {
    {sizeof(mstar_factory_t) + 1, 0, MSTAR_KIND_SUBMODULE, 0, FACTORY_NAME, &g_table},
    {sizeof(mstar_factory_t) + 1, 0, MSTAR_KIND_SUBMODULE, 0, "unlisted_extra", &g_table},
};
#elif FAULT == FAULT_HUGE_FACTORY_STRIDE
mstar_factory_t g_factories[] = {
    {0x80000000u, 0, MSTAR_KIND_SUBMODULE, 0, FACTORY_NAME, &g_table},
    {0x80000000u, 0, MSTAR_KIND_SUBMODULE, 0, "unlisted_extra", &g_table},
};
#else
mstar_factory_t g_factories[] = {
    {sizeof(mstar_factory_t), 0, MSTAR_KIND_SUBMODULE, 0, FACTORY_NAME, &g_table},
    {sizeof(mstar_factory_t), 0, MSTAR_KIND_SUBMODULE, 0, "unlisted_extra", &g_table},
};
#endif
#if FAULT == FAULT_EXTRA_FACTORY || FAULT == FAULT_WIDE_FACTORIES || \
    FAULT == FAULT_HUGE_FACTORY_STRIDE || FAULT == FAULT_ODD_FACTORY_STRIDE
constexpr uint32_t kNumFactories = 2;
#else
constexpr uint32_t kNumFactories = 1;
#endif
#if FAULT == FAULT_WRONG_NAME
constexpr const char* kName = "not_" PLUGIN_NAME;
#else
constexpr const char* kName = PLUGIN_NAME;
#endif
#if FAULT == FAULT_RECORDS_SHUTDOWN
void Shutdown() {
  if (const char* path = std::getenv("MSTAR_TEST_SHUTDOWN_FILE")) {
    if (FILE* file = std::fopen(path, "a")) {
      std::fputs("shutdown\n", file);
      std::fclose(file);
    }
  }
}
constexpr void (*kShutdown)() = &Shutdown;
#else
constexpr void (*kShutdown)() = nullptr;
#endif
mstar_plugin_api_t g_api = {
    sizeof(mstar_plugin_api_t), 0, kName, kNumFactories, 0, g_factories, kShutdown};

#if FAULT == FAULT_MAJOR2
constexpr uint32_t kMajor = 2;
#else
constexpr uint32_t kMajor = MSTAR_ABI_MAJOR;
#endif
#if FAULT == FAULT_NEEDS_MINOR3
constexpr uint32_t kMinHostMinor = 3;
#else
constexpr uint32_t kMinHostMinor = 0;
#endif
#if FAULT == FAULT_OLD_COLUMNAR
constexpr uint32_t kPluginMinor = 0;  // built against ABI 1.0
#elif FAULT == FAULT_OLD_TOKEN_INPUT
constexpr uint32_t kPluginMinor = 2;  // built against ABI 1.2
#else
constexpr uint32_t kPluginMinor = 3;
#endif

}  // namespace

#if FAULT == FAULT_NO_ENTRY
#define ENTRY_NAME mstar_plugin_entri
#else
#define ENTRY_NAME mstar_plugin_entry
#endif

extern "C" MSTAR_PLUGIN_EXPORT mstar_status_t* ENTRY_NAME(const mstar_host_api_t* host,
                                                          mstar_negotiation_t* negotiation,
                                                          const mstar_plugin_api_t** out_plugin) {
#if FAULT == FAULT_ENTRY_THROWS
  (void)host;
  (void)negotiation;
  (void)out_plugin;
  throw std::runtime_error("deliberate exception from the entry point");
#elif FAULT == FAULT_ENTRY_CRASHES
  (void)host;
  (void)negotiation;
  (void)out_plugin;
  std::raise(SIGSEGV);
  return nullptr;
#else
#if FAULT == FAULT_NO_NEGOTIATION
  *out_plugin = &g_api;
  return nullptr;
#endif
  g_host = host;
#if FAULT == FAULT_CLOBBERS_HOST_MINOR
  negotiation->host_minor = 9;  // claims a newer host than this one, to negotiate 9 below
  constexpr uint32_t kClaimedMinor = 9;
#else
  constexpr uint32_t kClaimedMinor = kPluginMinor;
#endif
  negotiation->plugin_major = kMajor;
  negotiation->plugin_minor = kClaimedMinor;
  negotiation->plugin_min_host_minor = kMinHostMinor;
  if (negotiation->host_major != kMajor) {
    return host->status_new(MSTAR_ERR_INCOMPATIBLE, "built for another ABI major");
  }
  if (negotiation->host_minor < kMinHostMinor) {
    return host->status_new(MSTAR_ERR_INCOMPATIBLE, "host too old");
  }
#if FAULT == FAULT_EXACT_MINOR || FAULT == FAULT_RECORDS_SHUTDOWN
  if (negotiation->host_minor != MSTAR_ABI_MINOR) {
    return host->status_new(MSTAR_ERR_INCOMPATIBLE, "built for this host minor exactly");
  }
#endif
#if FAULT == FAULT_ENTRY_ERROR
  return host->status_new(MSTAR_ERR_FAILED_PRECONDITION, "deliberate failure in the entry point");
#endif
  uint32_t negotiated =
      negotiation->host_minor < kClaimedMinor ? negotiation->host_minor : kClaimedMinor;
  negotiation->negotiated_minor = negotiated;
  g_api.struct_version = negotiated;
  g_table.struct_version = negotiated;
#if FAULT == FAULT_WIDE_FACTORIES
  for (WideFactory& f : g_wide) f.factory.struct_version = negotiated;
#else
  for (mstar_factory_t& f : g_factories) f.struct_version = negotiated;
#endif
  *out_plugin = &g_api;
  return nullptr;
#endif
}
