// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/session.h"

#include "core/diagnostic.h"
#include "device/device.h"
#include "model/checkpoint_identity.h"

namespace mstar {

namespace {

// Each node's device, and each resource's own, is one this process can use (a CUDA build, an
// index below the visible devices' count); InvalidArgument naming the manifest's key otherwise.
Status CheckDevices(const ModelSpec& model) {
  auto check = [](DLDevice device, const SourceLocation& where, const std::string& key) {
    Result<DeviceBackend*> backend = BackendFor(device);
    if (backend.ok()) return Status::Ok();
    return InvalidArgument(Diagnostic{where, key, backend.status().message()}.ToString());
  };
  for (const auto& [name, node] : model.nodes) {
    std::string key = "nodes." + name + ".device";
    if (!node.explicit_device) key += " (not set: the runtime config's [device])";
    MSTAR_RETURN_IF_ERROR(check(node.device, node.where, key));
  }
  for (const auto& [name, resource] : model.resources) {
    if (resource.explicit_device)
      MSTAR_RETURN_IF_ERROR(
          check(resource.device, resource.where, "resources." + name + ".device"));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Session>> Session::Open(const ModelSpec& model,
                                               const PluginRegistry& registry,
                                               const SessionOptions& options) {
  MSTAR_RETURN_IF_ERROR(CheckDevices(model));
  std::unique_ptr<Session> session(new Session());
  ModelRuntimeOptions runtime = options.runtime;  // the weights' identity unless given one
  if (runtime.checkpoint_identity.empty()) {
    MSTAR_ASSIGN_OR_RETURN(runtime.checkpoint_identity, ModelCheckpointIdentity(model));
  }
  MSTAR_ASSIGN_OR_RETURN(session->engine_, Engine::Load(model, registry, runtime));
  session->engine_->ConfigureCapture(options.capture);
  if (options.warmup) MSTAR_RETURN_IF_ERROR(session->engine_->Warmup());
  session->conductor_ = std::make_unique<Conductor>(*session->engine_, options.conductor);
  session->pipeline_ =
      std::make_unique<Pipeline>(*session->engine_, *session->conductor_, options.pipeline);
  session->pipeline_->Start();
  return session;
}

Session::~Session() {
  Close();
}

Result<std::shared_ptr<RequestStream>> Session::Submit(SubmitSpec spec) {
  std::shared_lock<std::shared_mutex> lock(lifetime_);
  if (conductor_ == nullptr) return Unavailable("the session is closed");
  return conductor_->Submit(std::move(spec));
}

std::vector<Result<std::shared_ptr<RequestStream>>> Session::SubmitAll(
    std::vector<SubmitSpec> specs) {
  std::shared_lock<std::shared_mutex> lock(lifetime_);
  if (conductor_ == nullptr) {
    std::vector<Result<std::shared_ptr<RequestStream>>> refused;
    for (size_t i = 0; i < specs.size(); ++i)
      refused.emplace_back(Unavailable("the session is closed"));
    return refused;
  }
  return conductor_->SubmitAll(std::move(specs));
}

bool Session::Cancel(RequestId id) {
  std::shared_lock<std::shared_mutex> lock(lifetime_);
  return conductor_ != nullptr && conductor_->Cancel(id);
}

void Session::WaitIdle() {
  std::shared_lock<std::shared_mutex> lock(lifetime_);
  if (conductor_ != nullptr) conductor_->WaitIdle();
}

ConductorStats Session::stats() const {
  std::shared_lock<std::shared_mutex> lock(lifetime_);
  return conductor_ != nullptr ? conductor_->stats() : ConductorStats{};
}

void Session::Close() {
  std::lock_guard<std::mutex> closing(close_mutex_);
  // Only Close (one at a time: close_mutex_) resets these, so they stay valid below without
  // lifetime_ held.
  Conductor* conductor = nullptr;
  Pipeline* pipeline = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(lifetime_);
    conductor = conductor_.get();
    pipeline = pipeline_.get();
  }
  // New submissions are refused and WaitIdle returns, so the calls in progress end. The batches
  // in flight drain and the requests left end cancelled: their streams' callbacks run here and
  // may call this session (which takes lifetime_ shared: not held here, a second shared lock on
  // one thread is undefined).
  if (conductor != nullptr) conductor->Stop();
  if (pipeline != nullptr) pipeline->Stop();
  if (conductor != nullptr) conductor->CancelAll("the engine shut down");
  std::unique_lock<std::shared_mutex> lock(lifetime_);
  pipeline_.reset();
  conductor_.reset();
  if (engine_ != nullptr) engine_->Shutdown();
  engine_.reset();
}

}  // namespace mstar
