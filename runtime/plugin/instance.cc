// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/instance.h"

#include <exception>
#include <mutex>

#include "core/keep_until_exit.h"
#include "core/logging.h"
#include "host/memory_ledger.h"

namespace mstar {
namespace {

// Every kind's table starts with the same four members: header, create, destroy.
struct KindTablePrefix {
  uint32_t struct_size;
  uint32_t struct_version;
  mstar_status_t* (*create)(const mstar_create_args_t* args, void** out_self);
  void (*destroy)(void* self);
};

#define MSTAR_SAME_PREFIX(T)                                                    \
  static_assert(offsetof(T, create) == offsetof(KindTablePrefix, create) &&     \
                    offsetof(T, destroy) == offsetof(KindTablePrefix, destroy), \
                #T " must start with create and destroy")
MSTAR_SAME_PREFIX(mstar_submodule_vtable_t);
MSTAR_SAME_PREFIX(mstar_resource_vtable_t);
MSTAR_SAME_PREFIX(mstar_tier_vtable_t);
MSTAR_SAME_PREFIX(mstar_model_vtable_t);
#undef MSTAR_SAME_PREFIX

std::shared_ptr<const ConfigTree> EmptyConfig() {
  static const std::shared_ptr<const ConfigTree> empty = std::make_shared<ConfigTree>();
  return empty;
}

}  // namespace

Result<std::unique_ptr<PluginInstance>> PluginInstance::Create(const FactoryRef& factory,
                                                               InstanceOptions options) {
  // A plugin shards by rank and world size and exchanges through comm: they must agree.
  // A group of several ranks exchanges through a communicator (mstar/host.h: comm is NULL only
  // when world_size is 1); without one, the comm services would act as a group of one.
  const std::string rank = "instance '" + options.name + "': rank " + std::to_string(options.rank) +
                           " of " + std::to_string(options.world_size);
  if (options.world_size == 0 || options.rank >= options.world_size)
    return InvalidArgument(rank + " is not a rank of the group");
  if (options.comm == nullptr && options.world_size > 1)
    return InvalidArgument(rank + " has no communicator");
  if (options.comm != nullptr &&
      (options.comm->rank != options.rank || options.comm->size != options.world_size)) {
    return InvalidArgument(rank + " disagrees with its communicator (rank " +
                           std::to_string(options.comm->rank) + " of " +
                           std::to_string(options.comm->size) + ")");
  }
  std::unique_ptr<PluginInstance> instance(new PluginInstance());
  instance->factory_ = factory;
  instance->options_ = std::move(options);
  InstanceOptions& o = instance->options_;
  if (o.config == nullptr) o.config = EmptyConfig();
  instance->context_ = factory.library->host().NewInstanceContext(o.name);

  mstar_create_args_t& args = instance->args_;
  args.struct_size = sizeof(args);
  args.struct_version = factory.library->negotiated_minor();
  args.host = factory.library->host().table();
  args.context = instance->context_.get();
  args.instance_name = o.name.c_str();
  args.config = o.config->root();
  args.device = o.device;
  args.rank = o.rank;
  args.world_size = o.world_size;
  args.comm = o.comm;
  args.num_tiers = static_cast<uint32_t>(o.tiers.size());
  args.tiers = o.tiers.empty() ? nullptr : o.tiers.data();
  args.checkpoint_identity = o.checkpoint_identity.empty() ? nullptr : o.checkpoint_identity.data();
  args.checkpoint_identity_size = o.checkpoint_identity.size();
  args.base_dir = o.base_dir.c_str();

  const auto* prefix = static_cast<const KindTablePrefix*>(factory.factory->vtable);
  instance->destroy_ = prefix->destroy;
  void* self = nullptr;
  Status status = CallPlugin(*instance, "create", [&] { return prefix->create(&args, &self); });
  if (!status.ok()) {
    instance->destroy_ = nullptr;  // nothing to destroy
    return status;
  }
  if (self == nullptr) {
    instance->destroy_ = nullptr;
    return Internal(instance->label() + ": create succeeded but returned no instance");
  }
  instance->self_ = self;
  // A key the plugin never looked at is most likely misspelt ("num_page"): it would otherwise
  // silently keep its default.
  for (const std::string& where : UnreadKeys(o.config->root())) {
    Log().warn(
        "{}: {} did not read this key when it was created (misspelt, or not one of its keys)",
        where, instance->label());
  }
  if (instance->kind() == MSTAR_KIND_SUBMODULE) {  // region_launch finds it through the context
    instance->context_->submodule = instance->submodule();
    instance->context_->submodule_self = self;
  }
  return instance;
}

PluginInstance::~PluginInstance() {
  if (destroy_ != nullptr && self_ != nullptr) {
    try {
      destroy_(self_);
    } catch (const std::exception& e) {
      Log().error("[{}] destroy threw an exception through the ABI: {}", label(), e.what());
      NoteEscapedException(label(), "destroy", e.what());
    } catch (...) {
      Log().error("[{}] destroy threw an exception through the ABI", label());
      NoteEscapedException(label(), "destroy", nullptr);
    }
  }
  if (context_ == nullptr) return;
  const MemoryLedger& ledger = MemoryLedger::Global();
  // Tensors it made may live on with their holders (outputs on their way to a client): only
  // memory_alloc blocks are the instance's to free.
  if (uint64_t leaked = ledger.AllocatedBy(context_.get()); leaked > 0) {
    Log().warn("[{}] was destroyed still holding {} bytes of memory_alloc memory (leak)", label(),
               leaked);
  }
  // The ledger names a block's owner by its context's address. A context whose blocks outlive
  // its instance (a leak, or a tensor living on with its holder) is kept, so that no later
  // instance's context takes its address and with it those blocks.
  if (ledger.HeldBy(context_.get()) > 0) KeepUntilExit(std::move(context_));
}

const mstar_submodule_vtable_t* PluginInstance::submodule() const {
  return kind() == MSTAR_KIND_SUBMODULE
             ? static_cast<const mstar_submodule_vtable_t*>(factory_.factory->vtable)
             : nullptr;
}

const mstar_resource_vtable_t* PluginInstance::resource() const {
  return kind() == MSTAR_KIND_RESOURCE
             ? static_cast<const mstar_resource_vtable_t*>(factory_.factory->vtable)
             : nullptr;
}

const mstar_tier_vtable_t* PluginInstance::tier() const {
  return kind() == MSTAR_KIND_TIER
             ? static_cast<const mstar_tier_vtable_t*>(factory_.factory->vtable)
             : nullptr;
}

const mstar_model_vtable_t* PluginInstance::model() const {
  return kind() == MSTAR_KIND_MODEL
             ? static_cast<const mstar_model_vtable_t*>(factory_.factory->vtable)
             : nullptr;
}

namespace {
std::mutex g_escaped_mutex;
std::string g_first_escaped;  // under g_escaped_mutex
}  // namespace

void NoteEscapedException(const std::string& instance, const char* hook,
                          const char* what) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_escaped_mutex);
    if (!g_first_escaped.empty()) return;
    g_first_escaped = instance + ": " + hook + " threw a C++ exception through the C ABI" +
                      (what != nullptr ? std::string(" (") + what + ")" : std::string());
  } catch (...) {  // out of memory while noting: the note is lost
  }
}

std::string FirstEscapedException() {
  std::lock_guard<std::mutex> lock(g_escaped_mutex);
  return g_first_escaped;
}

void ForgetEscapedExceptions() {
  std::lock_guard<std::mutex> lock(g_escaped_mutex);
  g_first_escaped.clear();
}

void PluginInstance::NoteHookThrew(const char* hook, const char* what) const noexcept {
  NoteEscapedException(label(), hook, what);
  try {
    const std::string message =
        what != nullptr ? std::string(": ") + what : std::string(" (not a std::exception)");
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(threw_mutex_);
      first = hooks_that_threw_.insert(hook).second;
    }
    if (first) {
      Log().error(
          "[{}] {} threw an exception through the ABI{}; ignored (the hook cannot fail; further "
          "exceptions from it are logged at debug level)",
          label(), hook, message);
    } else {
      Log().debug("[{}] {} threw an exception through the ABI{}; ignored", label(), hook, message);
    }
  } catch (...) {  // out of memory while reporting: the report is lost, the host carries on
  }
}

std::atomic<bool> g_track_plugin_calls{false};

namespace {

// The last call entered: the instance's label (a copy: the watchdog may read it while the hook
// runs) and the hook's name (a string literal).
std::mutex g_last_call_mutex;
std::string g_last_call_label;
const char* g_last_call_hook = nullptr;

}  // namespace

void NotePluginCall(const PluginInstance& instance, const char* hook) {
  std::lock_guard<std::mutex> lock(g_last_call_mutex);
  g_last_call_label = instance.label();
  g_last_call_hook = hook;
}

std::string LastPluginCall() {
  std::lock_guard<std::mutex> lock(g_last_call_mutex);
  if (g_last_call_hook == nullptr) return "";
  return g_last_call_label + ": " + g_last_call_hook;
}

}  // namespace mstar
