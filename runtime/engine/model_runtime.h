// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ModelRuntime: the live plugin instances of a model: tiers, resources (with their tier chains),
// one submodule per node and the optional controller. Each instance has a mutex, because the
// plugin contract says the host never calls one instance from two threads at once while the
// engine's threads work on different steps of the same node.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/model_spec.h"
#include "plugin/instance.h"

namespace mstar {

struct ResourceRuntime {
  std::string label;
  DLDevice device{kDLCPU, 0};  // where the resource keeps its state (ResourceSpec::device)
  std::unique_ptr<PluginInstance> instance;
  std::mutex mutex;    // serializes calls into the instance
  uint32_t flags = 0;  // MSTAR_RESOURCE_*
  std::string unit;
  // Steps the executor has open here (declared, not yet committed or aborted; ExecStepScope),
  // and where a pre-plan waits for them to close. Both under mutex.
  uint32_t exec_steps_open = 0;
  std::condition_variable exec_step_closed;
  const mstar_resource_vtable_t* table() const { return instance->resource(); }
  bool pre_plans() const { return (flags & MSTAR_RESOURCE_CAN_PRE_PLAN) != 0; }
  // The resource's hooks that cannot fail, through CallPluginVoid: an exception a plugin lets
  // escape is logged and the host carries on. REQUIRES: mutex held.
  void RemoveRequest(mstar_request_id_t id);
  void AbortStep(const mstar_step_decl_t& decl);
  void ResetPrePlan(int32_t slot);  // nothing when the resource has no reset_pre_plan
};

// Why an admission outcome of no known value (neither READY nor NOT_READY) fails the request:
// the resource's fault, named with the hook that answered it.
std::string UnknownAdmitOutcome(const ResourceRuntime& resource, const char* hook,
                                uint32_t outcome);

// While alive, the executor has a step open on each of resources that pre-plans (the others are
// never pre-planned, so nothing waits for them and the scope leaves them alone): a step's
// declare, admit, plan,
// forward and commit (or abort) take the resource's mutex one call at a time, and a pre-plan's
// declare in between would replace the open step (mstar/resource.h: a second declare replaces an
// undispatched one). WaitForExecSteps keeps pre-plans out until the scope ends, as the plan
// thread waits for the previous batch's commit.
class ExecStepScope {
 public:
  explicit ExecStepScope(const std::vector<ResourceRuntime*>& resources);
  ~ExecStepScope();
  ExecStepScope(const ExecStepScope&) = delete;
  ExecStepScope& operator=(const ExecStepScope&) = delete;

 private:
  const std::vector<ResourceRuntime*>& resources_;
};

// With resource.mutex held by lock: waits until no exec step is open on resource. Never call it
// from the executor while it has a step open (it would wait for itself).
void WaitForExecSteps(ResourceRuntime& resource, std::unique_lock<std::mutex>& lock);

struct TierRuntime {
  std::unique_ptr<PluginInstance> instance;
  mstar_tier_handle_t handle;  // what resources use to reach it
};

struct NodeRuntime {
  std::string name;
  int index = -1;
  const NodeSpec* spec = nullptr;
  std::unique_ptr<PluginInstance> instance;
  std::mutex mutex;    // serializes calls into the instance
  uint32_t flags = 0;  // MSTAR_SUBMODULE_*
  std::vector<std::string> stop_outputs;
  // The input whose values are the token ids a step adds (info.token_input; empty: none). Its
  // values go to the resources with each step (mstar_step_decl_t.input_tokens).
  std::string token_input;
  std::vector<ResourceRuntime*> resources;
  std::vector<mstar_capture_config_t> capture_configs;  // borrowed from the instance
  const mstar_submodule_vtable_t* table() const { return instance->submodule(); }
  // cleanup_request through CallPluginVoid (see ResourceRuntime::RemoveRequest); nothing when the
  // submodule has none. REQUIRES: mutex held.
  void CleanupRequest(mstar_request_id_t id);
  bool batched() const {
    return (flags & MSTAR_SUBMODULE_BATCHED) != 0 && table()->forward_batched != nullptr;
  }
  // Takes columnar steps (MSTAR_SUBMODULE_COLUMNAR, checked by CheckColumnarFlag).
  bool columnar() const { return (flags & MSTAR_SUBMODULE_COLUMNAR) != 0; }
  // Its partition always gets a stream's final chunk (MSTAR_SUBMODULE_FINAL_CHUNK, 1.4).
  bool wants_final_chunk() const { return (flags & MSTAR_SUBMODULE_FINAL_CHUNK) != 0; }
};

// A node whose instance declares MSTAR_SUBMODULE_COLUMNAR must have been negotiated at ABI 1.1 or
// newer and have a batched forward; the flag is dropped for an older minor (it meant nothing
// there) and refused without forward_batched.
Status CheckColumnarFlag(NodeRuntime& node);

struct ModelRuntimeOptions {
  std::vector<uint8_t> checkpoint_identity;
};

class ModelRuntime {
 public:
  // Creates every instance of a validated model from the registry's factories. Errors name the
  // node, resource or tier and the plugin's message.
  static Result<std::unique_ptr<ModelRuntime>> Load(const ModelSpec& model,
                                                    const PluginRegistry& registry,
                                                    const ModelRuntimeOptions& options);
  ~ModelRuntime();

  const ModelSpec& model() const { return model_; }
  std::vector<std::unique_ptr<NodeRuntime>>& nodes() { return nodes_; }
  NodeRuntime* node(const std::string& name);
  NodeRuntime* node(int index) { return nodes_[index].get(); }
  std::vector<std::unique_ptr<ResourceRuntime>>& resources() { return resources_; }
  PluginInstance* controller() { return controller_.get(); }
  std::mutex& controller_mutex() { return controller_mutex_; }

 private:
  ModelRuntime() = default;
  Status LoadTiers(const PluginRegistry& registry, const ModelRuntimeOptions& options);
  Status LoadResources(const PluginRegistry& registry, const ModelRuntimeOptions& options);
  Status LoadNodes(const PluginRegistry& registry, const ModelRuntimeOptions& options);

  ModelSpec model_;
  // Destruction order matters: nodes, then resources, then tiers (resources hold tier handles).
  std::map<std::string, std::unique_ptr<TierRuntime>> tiers_;
  std::vector<std::unique_ptr<ResourceRuntime>> resources_;
  std::vector<std::unique_ptr<NodeRuntime>> nodes_;
  std::unique_ptr<PluginInstance> controller_;
  std::mutex controller_mutex_;
};

}  // namespace mstar
