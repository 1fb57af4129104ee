// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PluginInstance: one object made by a plugin factory (a submodule, resource, tier or model),
// with everything the host keeps for it: the library reference that keeps the code loaded, the
// instance's host context, its config tree and create args. Destroying it calls the plugin's
// destroy and reports memory the instance still holds in the host's ledger.
//
// Thread-safety: the plugin contract lets the host call one instance from one thread at a time;
// callers (the engine) serialize calls per instance.
#pragma once

#include "core/fault_injection.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "core/status.h"
#include "host/host_objects.h"
#include "plugin/registry.h"

namespace mstar {

struct InstanceOptions {
  std::string name;                          // node name, resource label, ...
  std::shared_ptr<const ConfigTree> config;  // null: an empty table
  DLDevice device{kDLCPU, 0};
  std::string base_dir;  // relative paths in config resolve here
  std::vector<uint8_t> checkpoint_identity;
  std::vector<mstar_tier_handle_t*> tiers;  // resources only; borrowed, must outlive it
  uint32_t rank = 0;
  uint32_t world_size = 1;
  mstar_comm_t* comm = nullptr;
};

class PluginInstance {
 public:
  // Creates an instance with factory's create; the plugin's error (or exception) comes back as
  // the status, prefixed with the plugin and instance names.
  static Result<std::unique_ptr<PluginInstance>> Create(const FactoryRef& factory,
                                                        InstanceOptions options);
  ~PluginInstance();

  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  uint32_t kind() const { return factory_.factory->kind; }
  const std::string& name() const { return options_.name; }
  // "plugin/instance", for messages.
  const std::string& label() const { return context_->label; }
  void* self() const { return self_; }
  const mstar_host_api_t* host() const { return factory_.library->host().table(); }
  mstar_host_context_t* context() const { return context_.get(); }
  const PluginLibrary& library() const { return *factory_.library; }

  // The kind's table; null when the instance is of another kind.
  const mstar_submodule_vtable_t* submodule() const;
  const mstar_resource_vtable_t* resource() const;
  const mstar_tier_vtable_t* tier() const;
  const mstar_model_vtable_t* model() const;

  // Records that the void hook `hook` threw (what: the exception's message, or null when it was
  // not a std::exception). The first throw of each hook is logged as an error naming the
  // instance and the hook; later ones only at debug level, so a hook that throws on every
  // request does not flood the log. Thread-safe; never throws.
  void NoteHookThrew(const char* hook, const char* what) const noexcept;

 private:
  PluginInstance() = default;

  FactoryRef factory_;
  InstanceOptions options_;
  std::unique_ptr<mstar_host_context> context_;
  mstar_create_args_t args_{};
  void* self_ = nullptr;
  void (*destroy_)(void*) = nullptr;
  mutable std::mutex threw_mutex_;
  mutable std::set<std::string> hooks_that_threw_;  // under threw_mutex_
};

// Which hook was entered last, for a watchdog that names a hook that never returns (the
// conformance runner's rule processes). Off by default (CallPlugin then only reads the flag); on,
// CallPlugin records the instance and hook before each call. Both may be read from any thread.
extern std::atomic<bool> g_track_plugin_calls;
void NotePluginCall(const PluginInstance& instance, const char* hook);
// "label: hook" of the last call entered, or "" when none was.
std::string LastPluginCall();

// C++ exceptions that crossed the C ABI out of a plugin (CallPlugin, CallPluginVoid), process-wide:
// each is a plugin defect whatever its hook then returned, which the conformance suite fails a
// rule for. NoteEscapedException never throws; the first since ForgetEscapedExceptions is kept.
void NoteEscapedException(const std::string& instance, const char* hook, const char* what) noexcept;
// "label: hook threw ..." of the first exception noted, or "".
std::string FirstEscapedException();
void ForgetEscapedExceptions();

// Calls a plugin hook through its table and converts the status; a C++ exception that escapes a
// plugin built without the SDK's barrier becomes an error naming the instance instead of
// unwinding through the host.
template <typename Call>
Status CallPlugin(const PluginInstance& instance, const char* hook, Call&& call) {
  if (uint64_t ordinal = 0; ShouldInjectFault(FaultSite::kPluginCall, &ordinal)) {
    return Internal(instance.label() + ": " + hook + ": injected fault (plugin call #" +
                    std::to_string(ordinal) + ")");
  }
  if (g_track_plugin_calls.load(std::memory_order_relaxed)) NotePluginCall(instance, hook);
  try {
    mstar_status_t* status = call();
    if (status == nullptr) return Status::Ok();  // the hot path: no strings built
    return TakeStatus(status).WithContext(instance.label() + ": " + hook);
  } catch (const std::exception& e) {
    NoteEscapedException(instance.label(), hook, e.what());
    return Internal(instance.label() + ": " + hook +
                    " threw an exception through the ABI: " + e.what());
  } catch (...) {
    NoteEscapedException(instance.label(), hook, nullptr);
    return Internal(instance.label() + ": " + hook + " threw an exception through the ABI");
  }
}

// Calls a plugin hook that returns nothing (remove_request, cleanup_request, abort_step,
// reset_pre_plan): these run on abort and cleanup paths where there is nothing to fail, so a C++
// exception that escapes a plugin built without the SDK's barrier is caught, logged once per
// instance and hook (PluginInstance::NoteHookThrew), and the host carries on as if the hook had
// returned. Never throws.
template <typename Call>
void CallPluginVoid(const PluginInstance& instance, const char* hook, Call&& call) noexcept {
  try {
    if (g_track_plugin_calls.load(std::memory_order_relaxed)) NotePluginCall(instance, hook);
    call();
  } catch (const std::exception& e) {
    instance.NoteHookThrew(hook, e.what());
  } catch (...) {
    instance.NoteHookThrew(hook, nullptr);
  }
}

}  // namespace mstar
