// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's graph capture at warmup: every bucket of every capture configuration of a batched
// node, once per slot.
//
// A whole-forward slot is captured over a dummy step (engine/dummy_step.h) at the bucket's size:
// the dummies' prepared inputs become the slot's padded input templates, their resource views the
// slot's views, and capture_begin -> forward_batched -> capture_end runs inside the backend's
// capture. Before a bucket's first capture the same forward runs eagerly (capture.warmup_runs
// times, default once) and before each further slot's capture once, so that what the forward
// makes on first use of the bucket or the slot is made outside the capture.
// Region configs are captured by engine_regions.cc after the whole forwards.
// A replay loads the real rows into the slot's static buffers, refills the padding rows from the
// templates and launches the graph (on CPU the recording backend launches nothing, so the host
// runs forward_batched eagerly over the padded rows: step.num_requests real rows followed by
// step.padded_rows padding rows whose outputs are dropped).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "capture/buckets.h"
#include "core/logging.h"
#include "device/device.h"
#include "engine/dummy_step.h"
#include "engine/engine.h"
#include "model/walk_layout.h"

namespace mstar {
namespace {

std::string BucketText(const mstar_capture_bucket_t& bucket) {
  return fmt::format("batch {} with {} tokens", bucket.batch_size, bucket.num_tokens);
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

std::map<std::string, CaptureCounts> Engine::capture_counts() const {
  std::map<std::string, CaptureCounts> all;
  for (const auto& [device, backend] : capture_backends_) {
    for (const auto& [node, counts] : backend->log().CountsByNode()) all[node] += counts;
  }
  return all;
}

bool Engine::CapturesInModel(const NodeRuntime& node, size_t index,
                             const mstar_capture_config_t& config) const {
  auto walk = config.capture_walk != nullptr ? runtime_->model().walks.find(config.capture_walk)
                                             : runtime_->model().walks.end();
  if (walk == runtime_->model().walks.end()) {
    Log().debug("{}: capture config {} names walk '{}', which this model does not have",
                node.instance->label(), index, config.capture_walk ? config.capture_walk : "");
    return false;
  }
  if (WalkLayout(walk->second).Find(node.name) == nullptr) {
    Log().debug("{}: capture config {} names walk '{}', in which node '{}' does not run",
                node.instance->label(), index, config.capture_walk, node.name);
    return false;
  }
  return true;
}

Status Engine::CaptureNode(NodeRuntime& node) {
  if (node.capture_configs.empty()) return Status::Ok();
  if (!node.batched()) {
    Log().warn("{}: capture configurations need a batched forward; the node runs eagerly",
               node.instance->label());
    return Status::Ok();
  }
  // Dummy request ids hold a slot id in 20 bits (dummy_step.h).
  int64_t slot_ids = next_capture_slot_;
  uint32_t region_slots = 0;  // the regions of a node share their slots
  for (size_t i = 0; i < node.capture_configs.size(); ++i) {
    const mstar_capture_config_t& config = node.capture_configs[i];
    if (!CapturesInModel(node, i, config)) continue;
    if (config.region != nullptr) {
      region_slots = std::max(region_slots, SlotsOf(config));
    } else {
      slot_ids += int64_t{config.num_buckets} * SlotsOf(config);
    }
  }
  if (slot_ids + region_slots > kMaxCaptureSlotIds) {
    return FailedPrecondition(fmt::format(
        "node '{}': the model's capture configurations ask for {} graph slots up to this node "
        "(buckets times slots); at most {}",
        node.name, slot_ids + region_slots, kMaxCaptureSlotIds));
  }
  DLDevice device = node.spec != nullptr ? node.spec->device : DLDevice{kDLCPU, 0};
  MSTAR_ASSIGN_OR_RETURN(CaptureBackend * backend, BackendForCapture(device));
  auto captures = std::make_unique<NodeCaptures>(node.name, &node.capture_configs, backend,
                                                 &next_capture_slot_);
  for (size_t i = 0; i < node.capture_configs.size(); ++i) {
    const mstar_capture_config_t& config = node.capture_configs[i];
    if (!CapturesInModel(node, i, config)) continue;
    if (config.region != nullptr) continue;  // CaptureRegions, below
    std::vector<uint32_t> order(config.num_buckets);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(config.buckets[a].batch_size, config.buckets[a].num_tokens) >
             std::make_pair(config.buckets[b].batch_size, config.buckets[b].num_tokens);
    });
    for (uint32_t b : order) {
      SlotPool* pool = captures->AddPool(static_cast<int>(i), b, SlotsOf(config));
      Status captured;
      for (int32_t id = pool->first_id(); id < pool->first_id() + pool->size() && captured.ok();
           ++id) {
        // The bucket's first slot warms the step up; each other slot runs it once more, so that
        // what a forward makes per slot (state keyed by step.slot) is made outside the capture.
        const uint32_t warmup_runs = id == pool->first_id()
                                         ? capture_options_.warmup_runs
                                         : std::min(capture_options_.warmup_runs, 1u);
        captured =
            CaptureOneSlot(node, *captures, static_cast<int>(i), b, pool->slot(id), warmup_runs);
      }
      if (captured.ok()) continue;
      std::string walk = config.capture_walk != nullptr ? config.capture_walk : "";
      std::string what = fmt::format("capturing node '{}' walk '{}' at {} failed: {}", node.name,
                                     walk, BucketText(config.buckets[b]), captured.message());
      CaptureEvent failed = SiteEvent(*pool, CaptureEventKind::kCaptureFailed, -1, 0, 0);
      failed.reason = captured.message();
      backend->Record(std::move(failed));
      ForgetDummies(node, *pool);
      captures->RemovePool(static_cast<int>(i), b);
      if (!capture_options_.allow_fallback) {
        return FailedPrecondition(what +
                                  " (set capture.allow_fallback = true to run it eagerly instead)");
      }
      Log().warn("{}; that bucket runs eagerly (capture.allow_fallback)", what);
    }
  }
  MSTAR_RETURN_IF_ERROR(CaptureRegions(node, *captures, backend));
  captures_[static_cast<size_t>(node.index)] = std::move(captures);
  return Status::Ok();
}

// A pool whose graphs are dropped: the submodule forgets the dummy requests its slots' captures
// kept known (a graph may have read what it keeps per request; with no graph, nothing does).
void Engine::ForgetDummies(NodeRuntime& node, SlotPool& pool) {
  std::lock_guard<std::mutex> lock(node.mutex);
  for (int32_t id = pool.first_id(); id < pool.first_id() + pool.size(); ++id) {
    for (const mstar_request_info_t& row : pool.slot(id).dummy_rows)
      node.CleanupRequest(row.request_id);
  }
}

Status Engine::CaptureOneSlot(NodeRuntime& node, NodeCaptures& captures, int config_index,
                              uint32_t bucket_index, CaptureSlot& slot, uint32_t warmup_runs) {
  const mstar_capture_config_t& config = node.capture_configs[static_cast<size_t>(config_index)];
  const mstar_capture_bucket_t& bucket = config.buckets[bucket_index];
  // Dummy rows: their prepared inputs are the slot's padding templates, their views the slot's.
  DummyStep dummy;
  MSTAR_RETURN_IF_ERROR(PrepareDummyStep(node, config, bucket, slot.id, dummy));
  const uint32_t rows = static_cast<uint32_t>(dummy.rows.size());
  slot.dummy_rows = dummy.rows;  // known to the submodule from here on (ForgetDummies)
  slot.dummy_tokens = dummy.tokens;
  // The dummy step's plans may still be writing its views on the exec stream, and the templates
  // below are copied without a stream (on CUDA a copy that does not wait for the engine's
  // non-blocking streams): the plans land first.
  MSTAR_RETURN_IF_ERROR(FinishExec(node));
  std::vector<const mstar_tensor_map*> templates;
  for (const TensorMapPtr& map : dummy.prepared) templates.push_back(map.get());
  MSTAR_RETURN_IF_ERROR(slot.inputs.Init(templates));
  std::vector<const mstar_tensor_map*> view_templates;
  for (const TensorMapPtr& map : dummy.views) view_templates.push_back(map.get());
  MSTAR_RETURN_IF_ERROR(slot.views.Init(view_templates));

  // capture_begin -> forward_batched under the backend's capture -> capture_end.
  mstar_stream* stream = NodeStreams(node).exec();
  MSTAR_ASSIGN_OR_RETURN(CaptureBackend * backend, BackendForCapture(stream->device));
  std::vector<const mstar_tensor_map_t*> inputs;
  std::vector<mstar_tensor_map_t*> outputs;
  std::vector<const mstar_tensor_map*> views;
  slot.outputs.clear();
  for (uint32_t r = 0; r < rows; ++r) {
    inputs.push_back(slot.inputs.row(r));
    slot.outputs.push_back(NewTensorMap());
    outputs.push_back(slot.outputs.back().get());
  }
  for (size_t k = 0; k < node.resources.size(); ++k)
    views.push_back(slot.views.row(static_cast<uint32_t>(k)));
  std::vector<mstar_resource_view_t> resource_views;
  mstar_step_t step = dummy.Step(node, inputs, outputs, resource_views, views, stream);
  mstar_capture_info_t info{
      sizeof(mstar_capture_info_t),
      MSTAR_ABI_MINOR,
      dummy.walk->c_str(),
      nullptr,
      bucket,
      slot.id,
      0,
      stream,
      (static_cast<uint64_t>(node.index) << 32) | static_cast<uint32_t>(config_index)};
  SlotPool* pool = captures.PoolOf(slot.id);
  // The same step as an eager one on the slot (not capturing, no capture hooks): the forward's
  // first-use work (a BLAS handle, its workspace) happens here, not inside the capture, where it
  // is not allowed. What it wrote is dropped.
  for (uint32_t run = 0; run < warmup_runs; ++run) {
    Status warmed = ForwardEager(node, step, true);
    for (const TensorMapPtr& map : slot.outputs) map->Clear();
    if (!warmed.ok()) return warmed.WithContext("the eager run before the capture");
    backend->Record(SiteEvent(*pool, CaptureEventKind::kWarmupRun, slot.id, rows, 0));
  }
  step.capturing = 1;
  const mstar_submodule_vtable_t* t = node.table();
  Result<GraphHandle> graph = CaptureWithHooks(node, backend, info, [&] {
    return CallPlugin(*node.instance, "forward_batched",
                      [&] { return t->forward_batched(node.instance->self(), &step); });
  });
  // The dummies stay known to the submodule (no cleanup_request): a captured graph may read what
  // it keeps per request, and the dummy rows pad every replay of this slot.
  dummy.Leave();
  MSTAR_RETURN_IF_ERROR(graph.status());
  Result<ExecHandle> exec = backend->Instantiate(graph.value());
  if (!exec.ok()) {
    backend->DestroyGraph(graph.value());
    return exec.status();
  }
  slot.graph = graph.value();
  slot.exec = exec.value();
  backend->Record(SiteEvent(*pool, CaptureEventKind::kCapture, slot.id, rows, 0));
  return Status::Ok();
}

Result<GraphHandle> Engine::CaptureWithHooks(NodeRuntime& node, CaptureBackend* backend,
                                             const mstar_capture_info_t& info,
                                             const std::function<Status()>& body) {
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
    if (status.ok()) status = backend->BeginCapture(info.stream);
    if (status.ok()) {
      status = body();
      graph = backend->EndCapture(info.stream);
      if (status.ok() && !graph.ok()) status = graph.status();
    }
    if (begun && t->capture_end != nullptr) {
      Status ended = CallPlugin(*node.instance, "capture_end",
                                [&] { return t->capture_end(node.instance->self(), &info); });
      if (status.ok()) status = ended;
    }
  }
  if (!status.ok()) {
    if (graph.ok() && graph.value() != nullptr) backend->DestroyGraph(graph.value());
    return status;
  }
  return graph;
}

}  // namespace mstar
