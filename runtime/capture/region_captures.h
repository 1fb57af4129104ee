// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// RegionCaptures: one node's captured piecewise regions, and the runner behind region_launch for
// its submodule (host/region_runner.h).
//
// Graphs: one per (region config, bucket, slot), each with static inputs (RegionBuffers) and the
// static outputs its capture wrote. Slots: the node has one ring of region slots (a SlotPool
// whose slot ids follow the node's other slots); a step holds one slot for all regions of its
// forward, so a batch planned ahead into slot 1 never touches the buffers the step on slot 0
// replays. A config with fewer slots than the ring has no graph on the others (its region runs
// eagerly there).
//
// A step, on the exec thread: Enter (the step's walk and slot) -> the forward, whose
// region_launch calls pick, per region, the slot's graph of the smallest bucket holding the
// inputs' leading dimension, load the inputs (padding rows from the template), replay, and hand
// back copies of the outputs' real rows -> Exit (the slot is in flight until the replays' work
// completes). Without a current step (inside a whole-forward capture or replay, or at warmup
// outside recording) region_launch runs run_region as is; with one but no fitting graph it runs
// run_region eagerly and logs why once per (region, walk, rows, reason).
//
// Recording (warmup): between StartRecording and StopRecording, region_launch runs run_region
// eagerly and keeps a copy of the inputs each region is first launched with: the template of the
// region's static buffers.
//
// Thread-safety: graphs are added during warmup only. Lease and Release may run on the plan
// thread while the exec thread is inside a step; Enter, Launch and Exit run on the exec thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "capture/capture_backend.h"
#include "capture/fallback_memo.h"
#include "capture/region_buffers.h"
#include "capture/slot_pool.h"
#include "host/region_runner.h"
#include "plugin/instance.h"

namespace mstar {

// One captured region graph.
struct RegionGraph {
  int config = -1;      // index into the node's capture configs
  uint32_t bucket = 0;  // index into that config's buckets
  uint32_t rows = 0;    // the bucket's rows (RegionRows)
  int32_t slot = -1;    // node-wide slot id
  GraphHandle graph = nullptr;
  ExecHandle exec = nullptr;
  RegionBuffers inputs;
  TensorMapPtr outputs;  // what the capture wrote (a replay rewrites it)
};

class RegionCaptures final : public RegionRunner {
 public:
  // instance and configs are the node's (borrowed; they outlive this). Slot ids are
  // first_slot .. first_slot + num_slots - 1.
  RegionCaptures(std::string node, const PluginInstance* instance,
                 const std::vector<mstar_capture_config_t>* configs, CaptureBackend* backend,
                 int32_t first_slot, uint32_t num_slots);
  ~RegionCaptures() override;

  const std::string& node() const { return node_; }
  int32_t first_slot() const { return ring_.first_id(); }
  uint32_t num_slots() const { return static_cast<uint32_t>(ring_.size()); }

  // Warmup.
  void Add(std::unique_ptr<RegionGraph> graph);
  void Remove(int config, uint32_t bucket);  // a failed capture (fallback allowed)
  void StartRecording();
  // Region name -> the inputs it was first launched with since StartRecording.
  std::map<std::string, TensorMapPtr> StopRecording();

  // Whether a captured region replays inside the forwards of walk.
  bool ReplaysWalk(const std::string& walk) const;
  // A free region slot (round robin), or nullopt when every slot is leased or in flight.
  std::optional<int32_t> Lease();
  // Gives back a leased slot that no forward used.
  void Release(int32_t slot);

  // The step about to run its forward on this thread: its walk and slot (-1: none, why_none says
  // why, for the fallback log).
  void Enter(const std::string& walk, int32_t slot, const std::string& why_none);
  // The forward returned: the slot is in flight until the work its replays enqueued completes.
  void Exit();

  Status Launch(const char* region, const mstar_tensor_map_t& inputs, mstar_tensor_map_t& outputs,
                mstar_stream_t* stream) override;

  // The graph of region with bucket_rows rows on slot (tests poison and inspect its buffers).
  RegionGraph* Find(const std::string& region, uint32_t bucket_rows, int32_t slot);

 private:
  struct Current {
    bool active = false;
    bool recording = false;
    std::thread::id thread;
    std::string walk;
    int32_t slot = -1;
    std::string why_none;
    mstar_stream_t* replayed_on = nullptr;  // the stream of the step's last replay
    std::vector<mstar_stream_t*> also_on;   // other streams the step's replays were on
    bool replayed = false;
  };

  Status RunEagerly(const std::string& region, const mstar_tensor_map& inputs,
                    mstar_tensor_map& outputs, mstar_stream_t* stream);
  // The smallest graph on the current slot with enough rows whose captured inputs have the
  // shapes of region's inputs, or null with *reason.
  RegionGraph* Choose(const std::string& region, const Current& current,
                      const mstar_tensor_map& inputs, uint32_t rows, std::string* reason);
  Status Replay(RegionGraph& graph, const std::string& region, const std::string& walk,
                const mstar_tensor_map& inputs, uint32_t rows, mstar_tensor_map& outputs,
                mstar_stream_t* stream);
  void Fallback(const std::string& region, const std::string& walk, uint32_t rows,
                const std::string& reason);
  CaptureEvent Event(CaptureEventKind kind, const RegionGraph& graph, const std::string& region,
                     const std::string& walk) const;

  std::string node_;
  const PluginInstance* instance_;
  const std::vector<mstar_capture_config_t>* configs_;
  CaptureBackend* backend_;
  std::vector<std::unique_ptr<RegionGraph>> graphs_;
  // Built from graphs_ at warmup (Add, Remove), read per step and per launch: the graphs of each
  // region, and the walks some graph replays in.
  void Reindex();
  std::map<std::string, std::vector<RegionGraph*>, std::less<>> by_region_;
  std::set<std::string, std::less<>> walks_;
  SlotPool ring_;

  std::mutex mutex_;  // guards current_, recorded_, fallbacks_
  Current current_;
  std::map<std::string, TensorMapPtr> recorded_;
  FallbackMemo<std::tuple<std::string, std::string, uint32_t, std::string>> fallbacks_;
};

}  // namespace mstar
