// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/session.h"

#include "model/checkpoint_identity.h"

namespace mstar {

Result<std::unique_ptr<Session>> Session::Open(const ModelSpec& model,
                                               const PluginRegistry& registry,
                                               const SessionOptions& options) {
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

void Session::Close() {
  if (pipeline_ != nullptr) pipeline_->Stop();
  pipeline_.reset();
  if (conductor_ != nullptr) conductor_->CancelAll("the engine shut down");
  conductor_.reset();
  if (engine_ != nullptr) engine_->Shutdown();
  engine_.reset();
}

}  // namespace mstar
