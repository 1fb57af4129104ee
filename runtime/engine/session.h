// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Session: a model loaded and running, for embedders (the CLI, tests, later the server). It owns
// the engine, the conductor and the pipeline threads; requests are submitted with a prompt and
// their outputs read from the returned RequestStream.
//
// Thread-safe: any thread may submit, cancel, wait and read, also while another closes the
// session: calls in progress finish first, later ones are refused (Unavailable, false). A stream
// callback runs on a pipeline thread, or on the thread that submits, cancels or closes, inside
// that call; it may call Submit, SubmitAll, Cancel and stats (inside a call, without taking the
// session's lock again), never WaitIdle (it would wait for the delivery it is part of) or Close.
// Either is a checked error inside a call of this session; Close from a pipeline thread, which
// Close joins, is one too.
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>

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

  Result<std::shared_ptr<RequestStream>> Submit(SubmitSpec spec);
  std::vector<Result<std::shared_ptr<RequestStream>>> SubmitAll(std::vector<SubmitSpec> specs);
  bool Cancel(RequestId id);
  // Blocks until every submitted request has finished, or the session closes.
  void WaitIdle();
  ConductorStats stats() const;
  // Valid until Close.
  Engine& engine() { return *engine_; }

  // Refuses new requests, stops the pipeline (batches in flight drain; requests still running
  // end cancelled) and destroys the plugin instances. Waits for the calls in progress.
  void Close();

 private:
  Session() = default;
  // Shared by every call, exclusive while Close tears down what they use.
  mutable std::shared_mutex lifetime_;
  std::mutex close_mutex_;  // one Close at a time
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Conductor> conductor_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace mstar
