// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/region_captures.h"

#include <algorithm>

#include "capture/buckets.h"
#include "capture/padded_inputs.h"
#include "core/logging.h"
#include "device/device.h"

namespace mstar {
namespace {

CaptureEvent RingSite(const std::string& node) {
  CaptureEvent site;
  site.node = node;
  site.region = "*";  // the ring's slots serve every region of the node
  return site;
}

}  // namespace

RegionCaptures::RegionCaptures(std::string node, const PluginInstance* instance,
                               const std::vector<mstar_capture_config_t>* configs,
                               CaptureBackend* backend, int32_t first_slot, uint32_t num_slots)
    : node_(std::move(node)),
      instance_(instance),
      configs_(configs),
      backend_(backend),
      ring_(backend, RingSite(node_), first_slot, num_slots) {}

RegionCaptures::~RegionCaptures() {
  ring_.Drain();
  for (const std::unique_ptr<RegionGraph>& graph : graphs_) {
    backend_->DestroyExec(graph->exec);
    backend_->DestroyGraph(graph->graph);
  }
}

void RegionCaptures::Add(std::unique_ptr<RegionGraph> graph) {
  graphs_.push_back(std::move(graph));
  Reindex();
}

void RegionCaptures::Reindex() {
  by_region_.clear();
  walks_.clear();
  for (const std::unique_ptr<RegionGraph>& graph : graphs_) {
    const mstar_capture_config_t& config = (*configs_)[static_cast<size_t>(graph->config)];
    by_region_[config.region].push_back(graph.get());
    for (uint32_t w = 0; w < config.num_replay_walks; ++w) {
      if (config.replay_walks[w] != nullptr) walks_.insert(config.replay_walks[w]);
    }
  }
}

void RegionCaptures::Remove(int config, uint32_t bucket) {
  auto gone = [&](const std::unique_ptr<RegionGraph>& g) {
    if (g->config != config || g->bucket != bucket) return false;
    backend_->DestroyExec(g->exec);
    backend_->DestroyGraph(g->graph);
    return true;
  };
  graphs_.erase(std::remove_if(graphs_.begin(), graphs_.end(), gone), graphs_.end());
  Reindex();
}

void RegionCaptures::StartRecording() {
  std::lock_guard<std::mutex> lock(mutex_);
  recorded_.clear();
  current_ = Current{};
  current_.recording = true;
  current_.thread = std::this_thread::get_id();
}

std::map<std::string, TensorMapPtr> RegionCaptures::StopRecording() {
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = Current{};
  return std::move(recorded_);
}

bool RegionCaptures::ReplaysWalk(const std::string& walk) const {
  return walks_.count(walk) != 0;
}

std::optional<int32_t> RegionCaptures::Lease() {
  return ring_.Lease(0);
}

void RegionCaptures::Release(int32_t slot) {
  if (ring_.Owns(slot)) ring_.Release(slot);
}

void RegionCaptures::Enter(const std::string& walk, int32_t slot, const std::string& why_none) {
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = Current{};
  current_.active = true;
  current_.thread = std::this_thread::get_id();
  current_.walk = walk;
  current_.slot = slot;
  current_.why_none = why_none;
}

void RegionCaptures::Exit() {
  Current done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done = current_;
    current_ = Current{};
  }
  if (done.slot < 0 || !ring_.Owns(done.slot)) return;
  // The slot's buffers are free again once the work the replays enqueued has run: one fence
  // covers the last replay's stream; replays on other streams (rare) are waited for here.
  for (mstar_stream_t* other : done.also_on) {
    if (other == done.replayed_on || other == nullptr || other->backend == nullptr) continue;
    Status synced = other->backend->SynchronizeStream(other->device, other->native);
    if (!synced.ok()) Log().warn("{}: {}", node_, synced.message());
  }
  FenceHandle fence = nullptr;
  if (done.replayed) {
    Result<FenceHandle> recorded = backend_->RecordFence(done.replayed_on);
    if (recorded.ok()) {
      fence = recorded.value();
    } else if (done.replayed_on != nullptr && done.replayed_on->backend != nullptr) {
      Status synced = done.replayed_on->backend->SynchronizeStream(done.replayed_on->device,
                                                                   done.replayed_on->native);
      if (!synced.ok()) Log().warn("{}: {}", node_, synced.message());
    }
  }
  ring_.Launched(done.slot, fence);
}

Status RegionCaptures::Launch(const char* region, const mstar_tensor_map_t& inputs,
                              mstar_tensor_map_t& outputs, mstar_stream_t* stream) {
  const std::string name = region;
  Current current;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    current = current_;
  }
  const bool here = current.thread == std::this_thread::get_id();
  if (current.recording && here) {
    MSTAR_RETURN_IF_ERROR(RunEagerly(name, inputs, outputs, stream));
    std::lock_guard<std::mutex> lock(mutex_);
    if (recorded_.count(name) == 0) {
      // The inputs are ready on stream: copy them there and wait, so the copy is whole.
      void* native = stream != nullptr ? stream->native : nullptr;
      MSTAR_ASSIGN_OR_RETURN(TensorMapPtr copy, CopyTensorMap(inputs, native, true));
      if (native != nullptr && stream->backend != nullptr)
        MSTAR_RETURN_IF_ERROR(stream->backend->SynchronizeStream(stream->device, native));
      recorded_[name] = std::move(copy);
    }
    return Status::Ok();
  }
  // Outside a step's forward (a whole-forward capture or replay contains the region's work).
  if (!current.active || !here) return RunEagerly(name, inputs, outputs, stream);
  std::string reason;
  uint32_t rows = LeadingRows(inputs, &reason);
  RegionGraph* graph = rows == 0 ? nullptr : Choose(name, current, inputs, rows, &reason);
  if (graph == nullptr) {
    Fallback(name, current.walk, rows, reason);
    return RunEagerly(name, inputs, outputs, stream);
  }
  {
    // Marked before the replay: one that fails after enqueuing copies or the launch still has
    // work reading the slot's buffers, so Exit fences the slot either way.
    std::lock_guard<std::mutex> lock(mutex_);
    mstar_stream_t* before = current_.replayed_on;
    if (current_.replayed && before != stream &&
        std::find(current_.also_on.begin(), current_.also_on.end(), before) ==
            current_.also_on.end())
      current_.also_on.push_back(before);
    current_.replayed = true;
    current_.replayed_on = stream;
  }
  return Replay(*graph, name, current.walk, inputs, rows, outputs, stream);
}

RegionGraph* RegionCaptures::Choose(const std::string& region, const Current& current,
                                    const mstar_tensor_map& inputs, uint32_t rows,
                                    std::string* reason) {
  bool any_walk = false, any_slot = false;
  RegionGraph* best = nullptr;
  // Of the smallest graph with enough rows whose inputs have other shapes.
  std::string first_mismatch;
  uint32_t mismatch_rows = 0;
  static const std::vector<RegionGraph*> kNone;
  auto found = by_region_.find(region);
  for (RegionGraph* graph : found != by_region_.end() ? found->second : kNone) {
    const mstar_capture_config_t& config = (*configs_)[static_cast<size_t>(graph->config)];
    if (!RegionReplaysWalk(config, current.walk)) continue;
    any_walk = true;
    if (graph->slot != current.slot) continue;
    any_slot = true;
    if (graph->rows < rows || (best != nullptr && graph->rows >= best->rows)) continue;
    if (std::string why = graph->inputs.Mismatch(inputs, rows); !why.empty()) {
      if (first_mismatch.empty() || graph->rows < mismatch_rows) {
        first_mismatch = std::move(why);
        mismatch_rows = graph->rows;
      }
      continue;  // the next larger graph that matches takes the rows
    }
    best = graph;
  }
  if (best != nullptr) return best;
  if (!any_walk) {
    *reason = "no capture of region '" + region + "' replays in walk '" + current.walk + "'";
  } else if (current.slot < 0) {
    *reason = current.why_none.empty() ? "the step holds no region slot" : current.why_none;
  } else if (!any_slot) {
    *reason = "region '" + region + "' has no graph on slot " + std::to_string(current.slot);
  } else if (!first_mismatch.empty()) {
    *reason = first_mismatch;
  } else {
    *reason =
        "no captured bucket of region '" + region + "' holds " + std::to_string(rows) + " rows";
  }
  return nullptr;
}

Status RegionCaptures::Replay(RegionGraph& graph, const std::string& region,
                              const std::string& walk, const mstar_tensor_map& inputs,
                              uint32_t rows, mstar_tensor_map& outputs, mstar_stream_t* stream) {
  void* native = stream != nullptr ? stream->native : nullptr;
  MSTAR_RETURN_IF_ERROR(graph.inputs.Load(inputs, rows, native));
  const uint32_t padding = graph.rows - rows;
  if (padding > 0) {
    CaptureEvent event = Event(CaptureEventKind::kPadding, graph, region, walk);
    event.rows = rows;
    event.padding = padding;
    backend_->Record(std::move(event));
  }
  if (backend_->replays_eagerly()) {
    // No graph to launch: the region runs on the static inputs and rewrites the static outputs,
    // as the graph would.
    TensorMapPtr produced = NewTensorMap();
    MSTAR_RETURN_IF_ERROR(RunEagerly(region, *graph.inputs.map(), *produced, stream));
    MSTAR_RETURN_IF_ERROR(OverwriteOutputs(*produced, *graph.outputs, native));
  } else {
    MSTAR_RETURN_IF_ERROR(backend_->Launch(graph.exec, stream));
  }
  MSTAR_RETURN_IF_ERROR(CutRows(*graph.outputs, rows, graph.rows, outputs, native));
  CaptureEvent event = Event(CaptureEventKind::kReplay, graph, region, walk);
  event.rows = rows;
  event.padding = padding;
  backend_->Record(std::move(event));
  return Status::Ok();
}

Status RegionCaptures::RunEagerly(const std::string& region, const mstar_tensor_map& inputs,
                                  mstar_tensor_map& outputs, mstar_stream_t* stream) {
  const mstar_submodule_vtable_t* t = instance_->submodule();
  return CallPlugin(*instance_, "run_region", [&] {
    return t->run_region(instance_->self(), region.c_str(), &inputs, &outputs, stream);
  });
}

void RegionCaptures::Fallback(const std::string& region, const std::string& walk, uint32_t rows,
                              const std::string& reason) {
  FallbackMemo<std::tuple<std::string, std::string, uint32_t, std::string>>::Seen seen;
  size_t logged = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seen = fallbacks_.Note({region, walk, rows, reason});
    logged = fallbacks_.size();
  }
  if (seen == decltype(seen)::kJustFull) {
    Log().info("{}: {} eager region fallbacks logged; further ones are not", node_, logged);
  }
  if (seen != decltype(seen)::kFirst) return;
  Log().info("{}: region '{}' runs eagerly in walk '{}' at {} rows: {}", node_, region, walk, rows,
             reason);
  backend_->Record(FallbackEvent(node_, walk, region, rows, {rows, rows}, reason));
}

CaptureEvent RegionCaptures::Event(CaptureEventKind kind, const RegionGraph& graph,
                                   const std::string& region, const std::string& walk) const {
  CaptureEvent event;
  event.kind = kind;
  event.node = node_;
  event.walk = walk;
  event.region = region;
  event.config = graph.config;
  event.bucket = (*configs_)[static_cast<size_t>(graph.config)].buckets[graph.bucket];
  event.slot = graph.slot;
  return event;
}

RegionGraph* RegionCaptures::Find(const std::string& region, uint32_t bucket_rows, int32_t slot) {
  for (const std::unique_ptr<RegionGraph>& graph : graphs_) {
    const mstar_capture_config_t& config = (*configs_)[static_cast<size_t>(graph->config)];
    if (region == config.region && graph->rows == bucket_rows && graph->slot == slot)
      return graph.get();
  }
  return nullptr;
}

}  // namespace mstar
