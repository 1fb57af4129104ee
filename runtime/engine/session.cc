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

// The session calls this thread is inside, innermost first. A stream callback the engine runs
// inside one of them (a request that ends while Cancel or Submit delivers) may call the same
// session again; that call must not take its lifetime lock a second time, which is undefined
// behaviour for a std::shared_mutex (it deadlocks where readers wait behind a waiting writer).
struct CallFrame {
  std::shared_mutex* lifetime;
  const CallFrame* outer;
};
thread_local const CallFrame* innermost_call = nullptr;

bool InsideACallOf(const std::shared_mutex& lifetime) {
  for (const CallFrame* frame = innermost_call; frame != nullptr; frame = frame->outer) {
    if (frame->lifetime == &lifetime) return true;
  }
  return false;
}

// A session call: holds the session's lifetime lock shared for the call's length, unless this
// thread holds it already (a callback inside an outer call of the same session), or the call
// takes no lock (Close's teardown, marked so that its callbacks may not Close or WaitIdle).
class SharedCall {
 public:
  enum Locking { kShared, kUnlocked };
  explicit SharedCall(std::shared_mutex& lifetime, Locking locking = kShared)
      : frame_{&lifetime, innermost_call}, locked_(locking == kShared && !InsideACallOf(lifetime)) {
    if (locked_) lifetime.lock_shared();
    innermost_call = &frame_;
  }
  ~SharedCall() {
    innermost_call = frame_.outer;
    if (locked_) frame_.lifetime->unlock_shared();
  }
  SharedCall(const SharedCall&) = delete;
  SharedCall& operator=(const SharedCall&) = delete;

 private:
  CallFrame frame_;
  bool locked_;
};

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
  SharedCall call(lifetime_);
  if (conductor_ == nullptr) return Unavailable("the session is closed");
  return conductor_->Submit(std::move(spec));
}

std::vector<Result<std::shared_ptr<RequestStream>>> Session::SubmitAll(
    std::vector<SubmitSpec> specs) {
  SharedCall call(lifetime_);
  if (conductor_ == nullptr) {
    std::vector<Result<std::shared_ptr<RequestStream>>> refused;
    for (size_t i = 0; i < specs.size(); ++i)
      refused.emplace_back(Unavailable("the session is closed"));
    return refused;
  }
  return conductor_->SubmitAll(std::move(specs));
}

bool Session::Cancel(RequestId id) {
  SharedCall call(lifetime_);
  return conductor_ != nullptr && conductor_->Cancel(id);
}

void Session::WaitIdle() {
  // From a callback inside this thread's own call it would wait for the call it is part of.
  const bool called_outside_a_stream_callback_of_this_session = !InsideACallOf(lifetime_);
  MSTAR_CHECK(called_outside_a_stream_callback_of_this_session);
  SharedCall call(lifetime_);
  if (conductor_ != nullptr) conductor_->WaitIdle();
}

ConductorStats Session::stats() const {
  SharedCall call(lifetime_);
  return conductor_ != nullptr ? conductor_->stats() : ConductorStats{};
}

void Session::Close() {
  // From a callback inside this thread's own call it would wait for its own lock.
  const bool called_outside_a_stream_callback_of_this_session = !InsideACallOf(lifetime_);
  MSTAR_CHECK(called_outside_a_stream_callback_of_this_session);
  std::lock_guard<std::mutex> closing(close_mutex_);
  // Only Close (one at a time: close_mutex_) resets these, so they stay valid below without
  // lifetime_ held.
  Conductor* conductor = nullptr;
  Pipeline* pipeline = nullptr;
  {
    SharedCall call(lifetime_);
    conductor = conductor_.get();
    pipeline = pipeline_.get();
  }
  // New submissions are refused and WaitIdle returns, so the calls in progress end. The batches
  // in flight drain and the requests left end cancelled: their streams' callbacks run here,
  // inside this call (which holds no lock), and may call this session, except Close and WaitIdle.
  {
    SharedCall teardown(lifetime_, SharedCall::kUnlocked);
    if (conductor != nullptr) conductor->Stop();
    if (pipeline != nullptr) pipeline->Stop();
    if (conductor != nullptr) conductor->CancelAll("the engine shut down");
  }
  std::unique_lock<std::shared_mutex> lock(lifetime_);
  pipeline_.reset();
  conductor_.reset();
  if (engine_ != nullptr) engine_->Shutdown();
  engine_.reset();
}

}  // namespace mstar
