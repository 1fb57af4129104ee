// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/model_runtime.h"

#include "core/logging.h"
#include "plugin/submodule_descriptors.h"

namespace mstar {
namespace {

Result<std::unique_ptr<PluginInstance>> Instantiate(const PluginRegistry& registry, uint32_t kind,
                                                    const std::string& plugin,
                                                    InstanceOptions options,
                                                    const std::string& what) {
  Result<FactoryRef> factory = registry.Find(kind, plugin);
  if (!factory.ok()) return factory.status().WithContext(what);
  return PluginInstance::Create(factory.value(), std::move(options));
}

}  // namespace

Status CheckColumnarFlag(NodeRuntime& node) {
  if (!node.columnar()) return Status::Ok();
  if (node.table()->struct_version < 1) {
    node.flags &= ~MSTAR_SUBMODULE_COLUMNAR;
    return Status::Ok();
  }
  if (!node.batched()) {
    return FailedPrecondition(
        "node '" + node.name +
        "': the submodule declares MSTAR_SUBMODULE_COLUMNAR without "
        "MSTAR_SUBMODULE_BATCHED and a forward_batched to take columnar steps");
  }
  return Status::Ok();
}

Result<std::unique_ptr<ModelRuntime>> ModelRuntime::Load(const ModelSpec& model,
                                                         const PluginRegistry& registry,
                                                         const ModelRuntimeOptions& options) {
  std::unique_ptr<ModelRuntime> runtime(new ModelRuntime());
  runtime->model_ = model;
  MSTAR_RETURN_IF_ERROR(runtime->LoadTiers(registry, options));
  MSTAR_RETURN_IF_ERROR(runtime->LoadResources(registry, options));
  MSTAR_RETURN_IF_ERROR(runtime->LoadNodes(registry, options));
  if (!model.controller.empty()) {
    InstanceOptions o;
    o.name = model.name;
    o.base_dir = model.base_dir;
    MSTAR_ASSIGN_OR_RETURN(runtime->controller_,
                           Instantiate(registry, MSTAR_KIND_MODEL, model.controller, std::move(o),
                                       "model.controller"));
  }
  return runtime;
}

ModelRuntime::~ModelRuntime() {
  controller_.reset();
  nodes_.clear();
  resources_.clear();
  tiers_.clear();
}

Status ModelRuntime::LoadTiers(const PluginRegistry& registry, const ModelRuntimeOptions& options) {
  for (const auto& [name, spec] : model_.tiers) {
    InstanceOptions o;
    o.name = name;
    o.config = spec.config;
    o.base_dir = model_.base_dir;
    o.checkpoint_identity = options.checkpoint_identity;  // persistent tiers key reuse by it
    auto tier = std::make_unique<TierRuntime>();
    MSTAR_ASSIGN_OR_RETURN(tier->instance, Instantiate(registry, MSTAR_KIND_TIER, spec.plugin,
                                                       std::move(o), "tiers." + name));
    tier->handle.name = name;
    tier->handle.vtable = tier->instance->tier();
    tier->handle.self = tier->instance->self();
    tiers_[name] = std::move(tier);
  }
  return Status::Ok();
}

Status ModelRuntime::LoadResources(const PluginRegistry& registry,
                                   const ModelRuntimeOptions& options) {
  for (const auto& [name, spec] : model_.resources) {
    InstanceOptions o;
    o.name = name;
    o.config = spec.config;
    o.device = spec.device;
    o.base_dir = model_.base_dir;
    o.checkpoint_identity = options.checkpoint_identity;
    for (const std::string& tier : spec.tiers) o.tiers.push_back(&tiers_.at(tier)->handle);
    auto resource = std::make_unique<ResourceRuntime>();
    resource->label = name;
    resource->device = spec.device;
    MSTAR_ASSIGN_OR_RETURN(
        resource->instance,
        Instantiate(registry, MSTAR_KIND_RESOURCE, spec.plugin, std::move(o), "resources." + name));
    mstar_resource_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr};
    MSTAR_RETURN_IF_ERROR(CallPlugin(*resource->instance, "info", [&] {
      return resource->table()->info(resource->instance->self(), &info);
    }));
    resource->flags = info.flags;
    resource->unit = info.unit != nullptr ? info.unit : "units";
    resources_.push_back(std::move(resource));
  }
  return Status::Ok();
}

Status ModelRuntime::LoadNodes(const PluginRegistry& registry, const ModelRuntimeOptions& options) {
  for (const auto& [name, spec] : model_.nodes) {
    InstanceOptions o;
    o.name = name;
    o.config = spec.config;
    o.device = spec.device;
    o.base_dir = model_.base_dir;
    o.checkpoint_identity = options.checkpoint_identity;
    auto node = std::make_unique<NodeRuntime>();
    node->name = name;
    node->index = static_cast<int>(nodes_.size());
    node->spec = &model_.nodes.at(name);
    MSTAR_ASSIGN_OR_RETURN(node->instance, Instantiate(registry, MSTAR_KIND_SUBMODULE, spec.plugin,
                                                       std::move(o), "nodes." + name));
    mstar_submodule_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
    MSTAR_RETURN_IF_ERROR(CallPlugin(*node->instance, "info", [&] {
      return node->table()->info(node->instance->self(), &info);
    }));
    node->flags = info.flags;
    // A flag of 1.4: it meant nothing to an instance negotiated older.
    if (node->table()->struct_version < 4) node->flags &= ~MSTAR_SUBMODULE_FINAL_CHUNK;
    MSTAR_RETURN_IF_ERROR(CheckColumnarFlag(*node));
    MSTAR_RETURN_IF_ERROR(CheckSubmoduleInfo(*node->instance, info));
    for (uint32_t i = 0; i < info.num_stop_outputs; ++i)
      node->stop_outputs.emplace_back(info.stop_outputs[i]);
    // A field of 1.3: an instance negotiated older never wrote it (it stays NULL).
    if (node->table()->struct_version >= 3 && info.token_input != nullptr)
      node->token_input = info.token_input;
    MSTAR_ASSIGN_OR_RETURN(node->capture_configs, ReadCaptureConfigs(*node->instance));
    for (const std::string& label : spec.resources) {
      for (auto& resource : resources_) {
        if (resource->label == label) node->resources.push_back(resource.get());
      }
    }
    nodes_.push_back(std::move(node));
  }
  return Status::Ok();
}

void ResourceRuntime::RemoveRequest(mstar_request_id_t id) {
  CallPluginVoid(*instance, "remove_request",
                 [&] { table()->remove_request(instance->self(), id); });
}

void ResourceRuntime::AbortStep(const mstar_step_decl_t& decl) {
  CallPluginVoid(*instance, "abort_step", [&] { table()->abort_step(instance->self(), &decl); });
}

void ResourceRuntime::ResetPrePlan(int32_t slot) {
  if (table()->reset_pre_plan == nullptr) return;
  CallPluginVoid(*instance, "reset_pre_plan",
                 [&] { table()->reset_pre_plan(instance->self(), slot); });
}

void NodeRuntime::CleanupRequest(mstar_request_id_t id) {
  if (table()->cleanup_request == nullptr) return;
  CallPluginVoid(*instance, "cleanup_request",
                 [&] { table()->cleanup_request(instance->self(), id); });
}

NodeRuntime* ModelRuntime::node(const std::string& name) {
  for (auto& node : nodes_) {
    if (node->name == name) return node.get();
  }
  return nullptr;
}

ExecStepScope::ExecStepScope(const std::vector<ResourceRuntime*>& resources)
    : resources_(resources) {
  for (ResourceRuntime* resource : resources_) {
    if (!resource->pre_plans()) continue;
    std::lock_guard<std::mutex> lock(resource->mutex);
    ++resource->exec_steps_open;
  }
}

ExecStepScope::~ExecStepScope() {
  for (ResourceRuntime* resource : resources_) {
    if (!resource->pre_plans()) continue;
    {
      std::lock_guard<std::mutex> lock(resource->mutex);
      --resource->exec_steps_open;
    }
    resource->exec_step_closed.notify_all();
  }
}

void WaitForExecSteps(ResourceRuntime& resource, std::unique_lock<std::mutex>& lock) {
  resource.exec_step_closed.wait(lock, [&] { return resource.exec_steps_open == 0; });
}

std::string UnknownAdmitOutcome(const ResourceRuntime& resource, const char* hook,
                                uint32_t outcome) {
  std::string message = "resource '";
  message.append(resource.label).append("' (").append(resource.instance->label()).append("): ");
  message.append(hook).append(" answered outcome ").append(std::to_string(outcome));
  if (outcome == MSTAR_ADMIT_UNSERVABLE) {
    // The host's own mark for a failed hook: a plugin says unservable with an error status.
    message.append(
        " (UNSERVABLE) with an OK status; a request it cannot serve is an error "
        "status saying why");
  } else {
    message.append(", which is neither READY nor NOT_READY");
  }
  return message;
}

}  // namespace mstar
