// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Session: a model loaded and running, for embedders (the CLI, tests, later the server). It owns
// the engine, the conductor and the pipeline threads; requests are submitted with a prompt and
// their outputs read from the returned RequestStream.
//
// Thread-safe: any thread may submit, cancel and read.
#pragma once

#include <memory>

#include "engine/conductor.h"
#include "engine/pipeline.h"

namespace mstar {

struct SessionOptions {
  ConductorOptions conductor;
  ModelRuntimeOptions runtime;
  CaptureOptions capture;  // the runtime config's [capture]
  PipelineOptions pipeline;
  bool warmup = true;
};

class Session {
 public:
  // Loads every plugin instance of the model, warms it up and starts the pipeline.
  static Result<std::unique_ptr<Session>> Open(const ModelSpec& model,
                                               const PluginRegistry& registry,
                                               const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Result<std::shared_ptr<RequestStream>> Submit(SubmitSpec spec) {
    return conductor_->Submit(std::move(spec));
  }
  std::vector<Result<std::shared_ptr<RequestStream>>> SubmitAll(std::vector<SubmitSpec> specs) {
    return conductor_->SubmitAll(std::move(specs));
  }
  bool Cancel(RequestId id) { return conductor_->Cancel(id); }
  // Blocks until every submitted request has finished.
  void WaitIdle() { conductor_->WaitIdle(); }
  ConductorStats stats() const { return conductor_->stats(); }
  Engine& engine() { return *engine_; }

  // Stops the pipeline (batches in flight drain) and destroys the plugin instances.
  void Close();

 private:
  Session() = default;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Conductor> conductor_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace mstar
