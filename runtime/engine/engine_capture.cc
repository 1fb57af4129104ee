// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's graph capture: capturing every bucket at warmup and replaying captured graphs.
//
// Warmup captures each bucket of each whole-forward capture configuration of a batched node, once
// per slot: dummy requests (ids from kDummyIdBase up, int64 token inputs of zeros for every input
// the node receives in the capture walk) go through prepare_inputs, their prepared inputs become
// the slot's padded input templates, the node's resources declare, admit and plan them into the
// slot, and capture_begin -> forward_batched -> capture_end runs inside the backend's capture.
// A replay loads the real rows into the slot's static buffers, refills the padding rows from the
// templates and launches the graph (on CPU the recording backend launches nothing, so the host
// runs forward_batched eagerly over the padded rows: step.num_requests real rows followed by
// step.padded_rows padding rows whose outputs are dropped).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "capture/buckets.h"
#include "core/logging.h"
#include "device/device.h"
#include "engine/engine.h"

namespace mstar {
namespace {

// Dummy request ids: far above anything the conductor hands out.
constexpr RequestId kDummyIdBase = RequestId{1} << 62;

RequestId DummyId(int node, int32_t slot, uint32_t row) {
  return kDummyIdBase | (static_cast<uint64_t>(node) << 40) |
         (static_cast<uint64_t>(static_cast<uint32_t>(slot)) << 20) | row;
}

// The inputs node receives in walk (walk inputs and node-to-node edges), in order.
std::vector<std::string> NodeInputs(const ModelSpec& model, const std::string& walk,
                                    const std::string& node) {
  std::vector<std::string> names;
  auto it = model.walks.find(walk);
  if (it == model.walks.end()) return names;
  auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const WalkInputSpec& input : it->second.inputs) {
    if (input.node == node) add(input.input);
  }
  for (const EdgeSpec& edge : it->second.edges) {
    if (edge.kind == EdgeSpec::Kind::kNode && edge.to_node == node) add(edge.to_input);
  }
  return names;
}

std::string BucketText(const mstar_capture_bucket_t& bucket) {
  return fmt::format("batch {} with {} tokens", bucket.batch_size, bucket.num_tokens);
}

Result<mstar_tensor_t*> Zeros(uint32_t count) {
  MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * t,
                         AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                                        {static_cast<int64_t>(count)}));
  std::memset(t->dl.data, 0, TensorNumBytes(t->dl));
  return t;
}

CaptureEvent SiteEvent(const SlotPool& pool, CaptureEventKind kind, int32_t slot, uint32_t rows,
                       uint32_t padding) {
  CaptureEvent event = pool.site();
  event.kind = kind;
  event.slot = slot;
  event.rows = rows;
  event.padding = padding;
  return event;
}

}  // namespace

Result<CaptureBackend*> Engine::BackendForCapture(DLDevice device) {
  if (IsHostDevice(device)) device = DLDevice{kDLCPU, 0};
  auto key = std::make_pair(static_cast<int>(device.device_type), device.device_id);
  auto it = capture_backends_.find(key);
  if (it != capture_backends_.end()) return it->second.get();
  MSTAR_ASSIGN_OR_RETURN(std::unique_ptr<CaptureBackend> backend, MakeCaptureBackend(device));
  CaptureBackend* raw = backend.get();
  capture_backends_[key] = std::move(backend);
  return raw;
}

CaptureLog* Engine::capture_log(DLDevice device) {
  if (IsHostDevice(device)) device = DLDevice{kDLCPU, 0};
  auto it = capture_backends_.find({static_cast<int>(device.device_type), device.device_id});
  return it == capture_backends_.end() ? nullptr : &it->second->log();
}

Status Engine::CaptureNode(NodeRuntime& node) {
  if (node.capture_configs.empty()) return Status::Ok();
  if (!node.batched()) {
    Log().warn("{}: capture configurations need a batched forward; the node runs eagerly",
               node.instance->label());
    return Status::Ok();
  }
  DLDevice device = node.spec != nullptr ? node.spec->device : DLDevice{kDLCPU, 0};
  MSTAR_ASSIGN_OR_RETURN(CaptureBackend * backend, BackendForCapture(device));
  mstar_stream& stream = capture_streams_[static_cast<size_t>(node.index)];
  stream.device = device;
  if (!IsHostDevice(device)) {
    MSTAR_ASSIGN_OR_RETURN(stream.backend, BackendFor(device));
    MSTAR_ASSIGN_OR_RETURN(stream.native, stream.backend->CreateStream(device, 0));
    stream.owned = true;
  } else {
    MSTAR_ASSIGN_OR_RETURN(stream.backend, BackendFor(device));
  }
  auto captures = std::make_unique<NodeCaptures>(node.name, &node.capture_configs, backend);
  for (size_t i = 0; i < node.capture_configs.size(); ++i) {
    const mstar_capture_config_t& config = node.capture_configs[i];
    if (config.capture_walk == nullptr || runtime_->model().walks.count(config.capture_walk) == 0) {
      Log().debug("{}: capture config {} names walk '{}', which this model does not have",
                  node.instance->label(), i, config.capture_walk ? config.capture_walk : "");
      continue;
    }
    if (config.region != nullptr) {
      Log().info("{}: region '{}' runs eagerly (piecewise capture is not implemented yet)",
                 node.instance->label(), config.region);
      continue;
    }
    std::vector<uint32_t> order(config.num_buckets);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(config.buckets[a].batch_size, config.buckets[a].num_tokens) >
             std::make_pair(config.buckets[b].batch_size, config.buckets[b].num_tokens);
    });
    for (uint32_t b : order) {
      uint32_t slots = config.num_slots != 0 ? config.num_slots : capture_options_.num_slots;
      SlotPool* pool = captures->AddPool(static_cast<int>(i), b, std::max<uint32_t>(slots, 1));
      Status captured;
      for (int32_t id = pool->first_id(); id < pool->first_id() + pool->size() && captured.ok();
           ++id) {
        captured = CaptureOneSlot(node, *captures, static_cast<int>(i), b, pool->slot(id));
      }
      if (captured.ok()) continue;
      std::string walk = config.capture_walk != nullptr ? config.capture_walk : "";
      std::string what = fmt::format("capturing node '{}' walk '{}' at {} failed: {}", node.name,
                                     walk, BucketText(config.buckets[b]), captured.message());
      CaptureEvent failed = SiteEvent(*pool, CaptureEventKind::kCaptureFailed, -1, 0, 0);
      failed.reason = captured.message();
      backend->Record(std::move(failed));
      captures->RemovePool(static_cast<int>(i), b);
      if (!capture_options_.allow_fallback) {
        return FailedPrecondition(what +
                                  " (set capture.allow_fallback = true to run it eagerly instead)");
      }
      Log().warn("{}; that bucket runs eagerly (capture.allow_fallback)", what);
    }
  }
  captures_[static_cast<size_t>(node.index)] = std::move(captures);
  return Status::Ok();
}

Status Engine::CaptureOneSlot(NodeRuntime& node, NodeCaptures& captures, int config_index,
                              uint32_t bucket_index, CaptureSlot& slot) {
  const mstar_capture_config_t& config = node.capture_configs[static_cast<size_t>(config_index)];
  const mstar_capture_bucket_t& bucket = config.buckets[bucket_index];
  if (config.capture_walk == nullptr) return InvalidArgument("the config names no capture walk");
  auto walk = runtime_->model().walks.find(config.capture_walk);
  if (walk == runtime_->model().walks.end()) {
    return NotFound(fmt::format("the model has no walk '{}'", config.capture_walk));
  }
  std::vector<std::string> names = NodeInputs(runtime_->model(), walk->first, node.name);
  if (names.empty()) return NotFound("the node receives no inputs in the capture walk");
  const bool packed = (config.flags & MSTAR_CAPTURE_PACKED) != 0;
  const uint32_t rows = std::max<uint32_t>(bucket.batch_size, 1);

  // Dummy rows through prepare_inputs: their prepared inputs are the slot's padding templates.
  slot.dummy_rows.assign(rows, mstar_request_info_t{});
  slot.dummy_tokens.assign(rows, 0);
  std::vector<TensorMapPtr> prepared;
  for (uint32_t r = 0; r < rows; ++r) {
    uint32_t tokens = packed ? bucket.num_tokens / rows : RowTokens(bucket);
    if (packed && r == 0) tokens += bucket.num_tokens % rows;
    mstar_request_info_t& info = slot.dummy_rows[r];
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = DummyId(node.index, slot.id, r);
    info.walk = walk->first.c_str();
    info.partition = walk->second.partition.c_str();
    info.params = empty_params_->root();
    TensorMapPtr inputs = NewTensorMap();
    for (const std::string& name : names) {
      MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * zeros, Zeros(std::max<uint32_t>(tokens, 1)));
      MSTAR_RETURN_IF_ERROR(inputs->Append(name, zeros));
    }
    prepared.push_back(NewTensorMap());
    mstar_prepared_t out{sizeof(mstar_prepared_t), MSTAR_ABI_MINOR, 0, 0, 0, prepared.back().get()};
    {
      std::lock_guard<std::mutex> lock(node.mutex);
      MSTAR_RETURN_IF_ERROR(CallPlugin(*node.instance, "prepare_inputs", [&] {
        return node.table()->prepare_inputs(node.instance->self(), &info, inputs.get(), &out);
      }));
    }
    if (out.decline != 0) return FailedPrecondition("prepare_inputs declined a dummy request");
    slot.dummy_tokens[r] = out.num_tokens;
  }
  std::vector<const mstar_tensor_map*> templates;
  for (const TensorMapPtr& map : prepared) templates.push_back(map.get());
  MSTAR_RETURN_IF_ERROR(slot.inputs.Init(templates));

  // The dummies take part in the node's resources for the capture only.
  std::vector<mstar_request_id_t> ids;
  std::vector<const mstar_request_info_t*> infos;
  for (const mstar_request_info_t& info : slot.dummy_rows) {
    ids.push_back(info.request_id);
    infos.push_back(&info);
  }
  mstar_step_decl_t decl{sizeof(decl),
                         MSTAR_ABI_MINOR,
                         node.name.c_str(),
                         walk->first.c_str(),
                         rows,
                         slot.id,
                         ids.data(),
                         slot.dummy_tokens.data(),
                         infos.data(),
                         0,
                         0};
  std::vector<ResourceRuntime*> joined;
  std::vector<TensorMapPtr> views;
  auto leave = [&] {
    for (ResourceRuntime* resource : joined) {
      std::lock_guard<std::mutex> lock(resource->mutex);
      resource->table()->abort_step(resource->instance->self(), &decl);
      for (mstar_request_id_t id : ids)
        resource->table()->remove_request(resource->instance->self(), id);
    }
  };
  Status planned;
  for (ResourceRuntime* resource : node.resources) {
    std::lock_guard<std::mutex> lock(resource->mutex);
    const mstar_resource_vtable_t* t = resource->table();
    void* self = resource->instance->self();
    for (const mstar_request_info_t* info : infos) {
      planned = CallPlugin(*resource->instance, "add_request",
                           [&] { return t->add_request(self, info); });
      if (!planned.ok()) break;
    }
    joined.push_back(resource);
    if (planned.ok()) {
      planned = CallPlugin(*resource->instance, "declare", [&] { return t->declare(self, &decl); });
    }
    for (uint32_t k = 0; k < rows && planned.ok(); ++k) {
      mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, MSTAR_ADMIT_READY, 0, 0};
      planned = CallPlugin(*resource->instance, "admit",
                           [&] { return t->admit(self, &decl, k, &admit); });
      if (planned.ok() && admit.outcome != MSTAR_ADMIT_READY) {
        planned =
            ResourceExhausted("resource '" + resource->label + "' cannot admit the dummy requests");
      }
    }
    if (planned.ok()) {
      views.push_back(NewTensorMap());
      planned = CallPlugin(*resource->instance, "plan", [&] {
        return t->plan(self, &decl, views.back().get(),
                       &capture_streams_[static_cast<size_t>(node.index)]);
      });
    }
    if (!planned.ok()) break;
  }
  if (!planned.ok()) {
    leave();
    return planned;
  }
  std::vector<const mstar_tensor_map*> view_templates;
  for (const TensorMapPtr& map : views) view_templates.push_back(map.get());
  Status kept = slot.views.Init(view_templates);
  if (!kept.ok()) {
    leave();
    return kept;
  }

  // capture_begin -> forward_batched under the backend's capture -> capture_end.
  CaptureBackend* backend = nullptr;
  {
    Result<CaptureBackend*> found =
        BackendForCapture(capture_streams_[static_cast<size_t>(node.index)].device);
    if (!found.ok()) {
      leave();
      return found.status();
    }
    backend = found.value();
  }
  mstar_stream* stream = &capture_streams_[static_cast<size_t>(node.index)];
  std::vector<mstar_resource_view_t> resource_views;
  for (size_t k = 0; k < node.resources.size(); ++k) {
    resource_views.push_back({sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR,
                              node.resources[k]->label.c_str(),
                              slot.views.row(static_cast<uint32_t>(k))});
  }
  std::vector<const mstar_tensor_map_t*> inputs;
  std::vector<mstar_tensor_map_t*> outputs;
  slot.outputs.clear();
  for (uint32_t r = 0; r < rows; ++r) {
    inputs.push_back(slot.inputs.row(r));
    slot.outputs.push_back(NewTensorMap());
    outputs.push_back(slot.outputs.back().get());
  }
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.struct_version = MSTAR_ABI_MINOR;
  step.node = node.name.c_str();
  step.walk = walk->first.c_str();
  step.num_requests = rows;
  step.slot = slot.id;
  step.requests = infos.data();
  step.inputs = inputs.data();
  step.num_tokens = slot.dummy_tokens.data();
  step.num_resources = static_cast<uint32_t>(resource_views.size());
  step.resources = resource_views.empty() ? nullptr : resource_views.data();
  step.outputs = outputs.data();
  step.stream = stream;
  step.capturing = 1;
  mstar_capture_info_t info{
      sizeof(mstar_capture_info_t),
      MSTAR_ABI_MINOR,
      walk->first.c_str(),
      nullptr,
      bucket,
      slot.id,
      0,
      stream,
      (static_cast<uint64_t>(node.index) << 32) | static_cast<uint32_t>(config_index)};
  const mstar_submodule_vtable_t* t = node.table();
  Status status;
  Result<GraphHandle> graph = GraphHandle{nullptr};
  bool begun = false;  // capture_end undoes a capture_begin that succeeded
  {
    std::lock_guard<std::mutex> lock(node.mutex);
    if (t->capture_begin != nullptr) {
      status = CallPlugin(*node.instance, "capture_begin",
                          [&] { return t->capture_begin(node.instance->self(), &info); });
      begun = status.ok();
    }
    if (status.ok()) status = backend->BeginCapture(stream);
    if (status.ok()) {
      status = CallPlugin(*node.instance, "forward_batched",
                          [&] { return t->forward_batched(node.instance->self(), &step); });
      graph = backend->EndCapture(stream);
      if (status.ok() && !graph.ok()) status = graph.status();
    }
    if (begun && t->capture_end != nullptr) {
      Status ended = CallPlugin(*node.instance, "capture_end",
                                [&] { return t->capture_end(node.instance->self(), &info); });
      if (status.ok()) status = ended;
    }
  }
  leave();
  if (!status.ok()) {
    if (graph.ok()) backend->DestroyGraph(graph.value());
    return status;
  }
  Result<ExecHandle> exec = backend->Instantiate(graph.value());
  if (!exec.ok()) {
    backend->DestroyGraph(graph.value());
    return exec.status();
  }
  slot.graph = graph.value();
  slot.exec = exec.value();
  SlotPool* pool = captures.PoolOf(slot.id);
  backend->Record(SiteEvent(*pool, CaptureEventKind::kCapture, slot.id, rows, 0));
  return Status::Ok();
}

}  // namespace mstar
