// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Submodule: the C++ base class for the `submodule` kind (mstar/submodule.h). Derive from it,
// give the class a constructor taking `const mstar_create_args_t&`, override PrepareInputs and
// Forward, and whichever optional hooks you need; the SDK builds the ABI table and leaves every
// optional hook you did not override empty, so the host knows it is absent.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "mstar/sdk/instance.hpp"
#include "mstar/sdk/request.hpp"

namespace mstar::sdk {

struct SubmoduleInfo {
  uint32_t flags = 0;                     // MSTAR_SUBMODULE_*
  std::vector<std::string> stop_outputs;  // outputs the stop check reads
  // With ForwardColumnar overridden: declare MSTAR_SUBMODULE_COLUMNAR (false withholds it).
  bool columnar = true;
  // The input whose values are the token ids a step adds (int32 or int64, one per token); empty:
  // none. The host hands them to the node's resources, which key prefix caches by them.
  std::string token_input = {};
};

struct CaptureConfig {
  std::string capture_walk;
  std::vector<std::string> replay_walks;  // empty: just capture_walk
  std::vector<mstar_capture_bucket_t> buckets;
  uint32_t flags = 0;      // MSTAR_CAPTURE_*
  uint32_t num_slots = 0;  // 0: the host's default
  std::string region;      // empty: the whole forward
  uint64_t capture_key = 0;
};

// Buckets over batch size, each row tokens_per_row tokens: one per size listed under key in
// config (an array of integers in [1, 65536]; an error names the entry otherwise), or one per
// size in fallback when config has no key. A bucket's tokens (size * tokens_per_row) must fit
// 32 bits, and tokens_per_row be at least 1: an error names the key otherwise.
inline std::vector<mstar_capture_bucket_t> BatchBuckets(const Config& config, const char* key,
                                                        const std::vector<int64_t>& fallback,
                                                        int64_t tokens_per_row = 1) {
  std::vector<int64_t> sizes = fallback;
  Config given = config[key];
  if (given.exists()) {
    if (given.kind() != MSTAR_CONFIG_ARRAY)
      throw InvalidArgument(given.where() + ": expected an array of batch sizes, e.g. [1, 2, 4]");
    sizes.clear();
    for (uint32_t i = 0; i < given.size(); ++i) {
      int64_t size = given.at(i).as_int();
      if (size < 1 || size > 65536)
        throw InvalidArgument(given.at(i).where() +
                              ": a bucket's batch size must be in [1, 65536]");
      sizes.push_back(size);
    }
  }
  const std::string where = given.exists() ? given.where() : config.where() + "." + key;
  if (tokens_per_row < 1 || tokens_per_row > UINT32_MAX)
    throw InvalidArgument(where + ": " + std::to_string(tokens_per_row) +
                          " tokens per row is not in [1, 2^32)");
  std::vector<mstar_capture_bucket_t> buckets;
  for (int64_t size : sizes) {
    if (size > static_cast<int64_t>(UINT32_MAX / static_cast<uint64_t>(tokens_per_row)))
      throw InvalidArgument(where + ": a bucket of " + std::to_string(size) + " rows of " +
                            std::to_string(tokens_per_row) + " tokens holds more than 2^32 tokens");
    buckets.push_back({static_cast<uint32_t>(size), static_cast<uint32_t>(size * tokens_per_row)});
  }
  return buckets;
}

// What PrepareInputs fills for one request.
class PreparedInputs {
 public:
  PreparedInputs(const mstar_host_api_t* host, mstar_tensor_map_t* map) : tensors(host, map) {}
  TensorMapRef tensors;     // the inputs the forward will see for this request
  uint32_t num_tokens = 0;  // tokens this step adds (declared to the node's resources)
  uint64_t capture_key = 0;
  bool declined = false;
  // Leaves the request out of this step (not an error).
  void Decline() { declined = true; }
};

class Submodule : public Instance {
 public:
  using Instance::Instance;

  virtual SubmoduleInfo Info() { return {}; }
  virtual uint32_t MaxBatchSize(std::string_view walk) {
    (void)walk;
    return 0;
  }
  virtual void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                             PreparedInputs& out) = 0;
  virtual void Forward(const Step& step) = 0;

  // Optional hooks: override to provide them.
  virtual void ForwardBatched(const Step& step) { Forward(step); }
  // The columnar form of ForwardBatched (step.columnar() is true): read step.columnar_inputs()
  // and step.input_rows(), write one tensor per output to step.columnar_outputs() and the row
  // offsets of outputs not one per request to step.output_rows(). Overriding it declares
  // MSTAR_SUBMODULE_COLUMNAR; ForwardBatched must be overridden too, since the host may run any
  // batch in either form and each request must get the same outputs from both.
  virtual void ForwardColumnar(const Step& step) { ForwardBatched(step); }
  virtual void Postprocess(const RequestInfo& request, TensorMapRef outputs) {
    (void)request;
    (void)outputs;
  }
  // Bit i set: stop request.loop_name(i).
  virtual uint64_t CheckStop(const RequestInfo& request, const TensorMapView& host_outputs) {
    (void)request;
    (void)host_outputs;
    return 0;
  }
  virtual void CheckStopBatched(const std::vector<RequestInfo>& requests,
                                const std::vector<TensorMapView>& host_outputs, uint64_t* masks) {
    for (size_t i = 0; i < requests.size(); ++i) masks[i] = CheckStop(requests[i], host_outputs[i]);
  }
  // PrepareInputs for a whole columnar step (slot prepare_inputs_columnar): step.columnar_inputs()
  // and step.input_rows() hold the node inputs of every request; append what the forward needs to
  // prepared (one tensor per name), offsets of names not one row per request to rows, and set
  // num_tokens[i] for step.request(i). It cannot decline a request: a submodule that declines
  // does not override it.
  virtual void PrepareColumnar(const Step& step, TensorMapRef prepared, TensorMapRef rows,
                               uint32_t* num_tokens) {
    (void)step;
    (void)prepared;
    (void)rows;
    (void)num_tokens;
  }
  // The stop check of a columnar step: masks[i] for step.request(i), as CheckStop would give.
  // host_outputs holds the stop outputs of the whole batch stacked as the forward wrote them;
  // RowsOf(rows, name) gives each request's rows of them.
  virtual void CheckStopColumnar(const Step& step, const TensorMapView& host_outputs,
                                 const TensorMapView& rows, uint64_t* masks) {
    (void)step;
    (void)host_outputs;
    (void)rows;
    (void)masks;
  }
  virtual std::vector<CaptureConfig> CaptureConfigs() { return {}; }
  virtual uint64_t CaptureKey(const RequestInfo& request) {
    (void)request;
    return 0;
  }
  virtual void CaptureBegin(const mstar_capture_info_t& capture) { (void)capture; }
  virtual void CaptureEnd(const mstar_capture_info_t& capture) { (void)capture; }
  virtual void RunRegion(std::string_view region, const TensorMapView& inputs, TensorMapRef outputs,
                         mstar_stream_t* stream) {
    (void)inputs;
    (void)outputs;
    (void)stream;
    throw Unsupported("no region '" + std::string(region) + "'");
  }
  virtual void Warmup(mstar_stream_t* stream) { (void)stream; }
  virtual void CleanupRequest(mstar_request_id_t request_id) { (void)request_id; }

  // Runs a region named by one of CaptureConfigs() from inside Forward/ForwardBatched (host
  // service region_launch): the host replays the region's graph for the step's slot when one fits
  // the inputs (they lead with the rows: the batch size, or the tokens of a PACKED config), and
  // otherwise calls RunRegion eagerly. outputs receives fresh copies of the real rows; throws the
  // region's error.
  void LaunchRegion(const char* region, const TensorMapView& inputs, TensorMapRef outputs,
                    mstar_stream_t* stream) const {
    Check(host(),
          host()->region_launch(context(), region, inputs.raw(), outputs.raw_mutable(), stream));
  }

 private:
  template <typename T>
  friend struct SubmoduleTable;
  // Storage behind the borrowed pointers the ABI hands out (valid until destroy): filled by the
  // first call of info / capture_configs and kept, so pointers handed out earlier stay valid.
  bool info_built_ = false;
  bool captures_built_ = false;
  SubmoduleInfo info_storage_;
  std::vector<const char*> stop_output_ptrs_;
  std::vector<CaptureConfig> capture_storage_;
  std::vector<std::vector<const char*>> capture_walk_ptrs_;
  std::vector<mstar_capture_config_t> capture_configs_;
};

// Builds the ABI table for T.
template <typename T>
struct SubmoduleTable {
  static_assert(std::is_base_of_v<Submodule, T>, "T must derive from mstar::sdk::Submodule");
  static_assert(!MSTAR_SDK_OVERRIDES(T, Submodule, ForwardColumnar) ||
                    MSTAR_SDK_OVERRIDES(T, Submodule, ForwardBatched),
                "a submodule with ForwardColumnar must override ForwardBatched too");
  // The host checks single requests with CheckStop, and falls back to it when a batched or
  // columnar check fails: without it, the loops would never stop.
  static_assert((!MSTAR_SDK_OVERRIDES(T, Submodule, CheckStopBatched) &&
                 !MSTAR_SDK_OVERRIDES(T, Submodule, CheckStopColumnar)) ||
                    MSTAR_SDK_OVERRIDES(T, Submodule, CheckStop),
                "a submodule with CheckStopBatched or CheckStopColumnar must override CheckStop "
                "too");

  static T* Self(void* self) { return Lifecycle<T>::Self(self); }

  static mstar_status_t* GetInfo(void* self, mstar_submodule_info_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      if (!s->info_built_) {  // static facts: asked once, their storage kept until destroy
        s->info_storage_ = s->Info();
        s->stop_output_ptrs_.clear();
        for (const std::string& name : s->info_storage_.stop_outputs) {
          s->stop_output_ptrs_.push_back(name.c_str());
        }
        s->info_built_ = true;
      }
      mstar_submodule_info_t info{};
      info.struct_size = sizeof(info);
      info.struct_version = MSTAR_ABI_MINOR;
      info.flags = s->info_storage_.flags;
      if (MSTAR_SDK_OVERRIDES(T, Submodule, ForwardBatched)) info.flags |= MSTAR_SUBMODULE_BATCHED;
      if (MSTAR_SDK_OVERRIDES(T, Submodule, ForwardColumnar) && s->info_storage_.columnar)
        info.flags |= MSTAR_SUBMODULE_COLUMNAR;
      info.num_stop_outputs = static_cast<uint32_t>(s->stop_output_ptrs_.size());
      info.stop_outputs = s->stop_output_ptrs_.empty() ? nullptr : s->stop_output_ptrs_.data();
      info.token_input =
          s->info_storage_.token_input.empty() ? nullptr : s->info_storage_.token_input.c_str();
      WriteOut(out, info);
    });
  }
  static mstar_status_t* MaxBatchSize(void* self, const char* walk, uint32_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->MaxBatchSize(walk); });
  }
  static mstar_status_t* PrepareInputs(void* self, const mstar_request_info_t* request,
                                       const mstar_tensor_map_t* inputs, mstar_prepared_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      PreparedInputs prepared(s->host(), out->tensors);
      s->PrepareInputs(RequestInfo(s->host(), request), TensorMapView(s->host(), inputs), prepared);
      out->decline = prepared.declined ? 1u : 0u;
      out->num_tokens = prepared.num_tokens;
      out->capture_key = prepared.capture_key;
    });
  }
  static mstar_status_t* Forward(void* self, const mstar_step_t* step) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->Forward(Step(s->host(), step)); });
  }
  static mstar_status_t* ForwardBatched(void* self, const mstar_step_t* step) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      Step view(s->host(), step);
      if (view.columnar()) {
        s->ForwardColumnar(view);
      } else {
        s->ForwardBatched(view);
      }
    });
  }
  static mstar_status_t* Postprocess(void* self, const mstar_request_info_t* request,
                                     mstar_tensor_map_t* outputs) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      s->Postprocess(RequestInfo(s->host(), request), TensorMapRef(s->host(), outputs));
    });
  }
  static mstar_status_t* CheckStop(void* self, const mstar_request_info_t* request,
                                   const mstar_tensor_map_t* host_outputs, uint64_t* out_mask) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      *out_mask =
          s->CheckStop(RequestInfo(s->host(), request), TensorMapView(s->host(), host_outputs));
    });
  }
  static mstar_status_t* CheckStopBatched(void* self, uint32_t n,
                                          const mstar_request_info_t* const* requests,
                                          const mstar_tensor_map_t* const* host_outputs,
                                          uint64_t* out_masks) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      std::vector<RequestInfo> infos;
      std::vector<TensorMapView> maps;
      for (uint32_t i = 0; i < n; ++i) {
        infos.emplace_back(s->host(), requests[i]);
        maps.emplace_back(s->host(), host_outputs[i]);
      }
      std::vector<uint64_t> masks(n, 0);
      s->CheckStopBatched(infos, maps, masks.data());
      std::copy(masks.begin(), masks.end(), out_masks);
    });
  }
  static mstar_status_t* CheckStopColumnar(void* self, const mstar_step_t* step,
                                           const mstar_tensor_map_t* host_outputs,
                                           const mstar_tensor_map_t* output_rows,
                                           uint64_t* out_masks) {
    T* s = Self(self);
    // Written in place: the host reads the masks only when the call succeeds.
    return Guard(s->host(), [&] {
      std::fill_n(out_masks, step->num_requests, uint64_t{0});
      s->CheckStopColumnar(Step(s->host(), step), TensorMapView(s->host(), host_outputs),
                           TensorMapView(s->host(), output_rows), out_masks);
    });
  }
  static mstar_status_t* PrepareColumnar(void* self, const mstar_step_t* step,
                                         mstar_tensor_map_t* prepared, mstar_tensor_map_t* rows,
                                         uint32_t* out_num_tokens) {
    T* s = Self(self);
    // Written in place: the host reads the counts only when the call succeeds.
    return Guard(s->host(), [&] {
      std::fill_n(out_num_tokens, step->num_requests, uint32_t{0});
      s->PrepareColumnar(Step(s->host(), step), TensorMapRef(s->host(), prepared),
                         TensorMapRef(s->host(), rows), out_num_tokens);
    });
  }
  static mstar_status_t* CaptureConfigs(void* self, uint32_t* out_count,
                                        const mstar_capture_config_t** out_configs) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      if (!s->captures_built_) BuildCaptureConfigs(*s);
      *out_count = static_cast<uint32_t>(s->capture_configs_.size());
      *out_configs = s->capture_configs_.empty() ? nullptr : s->capture_configs_.data();
    });
  }
  // Asks the instance for its capture configurations once; their storage is kept until destroy.
  // Built aside and kept only whole, so a throwing CaptureConfigs leaves nothing half made.
  static void BuildCaptureConfigs(T& s) {
    std::vector<CaptureConfig> storage = s.CaptureConfigs();
    std::vector<std::vector<const char*>> walk_ptrs;
    std::vector<mstar_capture_config_t> configs;
    for (CaptureConfig& c : storage) {
      if (c.replay_walks.empty()) c.replay_walks.push_back(c.capture_walk);
      std::vector<const char*> walks;
      for (const std::string& w : c.replay_walks) walks.push_back(w.c_str());
      walk_ptrs.push_back(std::move(walks));
    }
    for (size_t i = 0; i < storage.size(); ++i) {
      const CaptureConfig& c = storage[i];
      mstar_capture_config_t out{};
      out.struct_size = sizeof(out);
      out.struct_version = MSTAR_ABI_MINOR;
      out.capture_walk = c.capture_walk.c_str();
      out.num_replay_walks = static_cast<uint32_t>(walk_ptrs[i].size());
      out.replay_walks = walk_ptrs[i].data();
      out.flags = c.flags;
      out.num_buckets = static_cast<uint32_t>(c.buckets.size());
      out.buckets = c.buckets.data();
      out.num_slots = c.num_slots;
      out.region = c.region.empty() ? nullptr : c.region.c_str();
      out.capture_key = c.capture_key;
      configs.push_back(out);
    }
    // Moving a vector keeps its elements where they are: the pointers above stay valid.
    s.capture_storage_ = std::move(storage);
    s.capture_walk_ptrs_ = std::move(walk_ptrs);
    s.capture_configs_ = std::move(configs);
    s.captures_built_ = true;
  }
  static mstar_status_t* CaptureKey(void* self, const mstar_request_info_t* request,
                                    uint64_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] { *out = s->CaptureKey(RequestInfo(s->host(), request)); });
  }
  static mstar_status_t* CaptureBegin(void* self, const mstar_capture_info_t* capture) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->CaptureBegin(*capture); });
  }
  static mstar_status_t* CaptureEnd(void* self, const mstar_capture_info_t* capture) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->CaptureEnd(*capture); });
  }
  static mstar_status_t* RunRegion(void* self, const char* region, const mstar_tensor_map_t* inputs,
                                   mstar_tensor_map_t* outputs, mstar_stream_t* stream) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      s->RunRegion(region, TensorMapView(s->host(), inputs), TensorMapRef(s->host(), outputs),
                   stream);
    });
  }
  static mstar_status_t* Warmup(void* self, mstar_stream_t* stream) {
    T* s = Self(self);
    return Guard(s->host(), [&] { s->Warmup(stream); });
  }
  static void CleanupRequest(void* self, mstar_request_id_t request_id) {
    T* s = Self(self);
    GuardVoid(s->host(), s->context(), "cleanup_request", [&] { s->CleanupRequest(request_id); });
  }

  // The table, with each optional slot present only when T overrides the hook.
  static mstar_submodule_vtable_t Build() {
    mstar_submodule_vtable_t t{};
    t.struct_size = sizeof(t);
    t.struct_version = MSTAR_ABI_MINOR;
    t.create = &Lifecycle<T>::Create;
    t.destroy = &Lifecycle<T>::Destroy;
    t.info = &GetInfo;
    t.prepare_inputs = &PrepareInputs;
    t.forward = &Forward;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, MaxBatchSize)) t.max_batch_size = &MaxBatchSize;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, ForwardBatched)) t.forward_batched = &ForwardBatched;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, Postprocess)) t.postprocess = &Postprocess;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CheckStop)) t.check_stop = &CheckStop;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CheckStopBatched))
      t.check_stop_batched = &CheckStopBatched;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CaptureConfigs)) t.capture_configs = &CaptureConfigs;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CaptureKey)) t.capture_key = &CaptureKey;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CaptureBegin)) t.capture_begin = &CaptureBegin;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CaptureEnd)) t.capture_end = &CaptureEnd;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, RunRegion)) t.run_region = &RunRegion;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, Warmup)) t.warmup = &Warmup;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CleanupRequest)) t.cleanup_request = &CleanupRequest;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, CheckStopColumnar))
      t.check_stop_columnar = &CheckStopColumnar;
    if (MSTAR_SDK_OVERRIDES(T, Submodule, PrepareColumnar))
      t.prepare_inputs_columnar = &PrepareColumnar;
    return t;
  }
};

}  // namespace mstar::sdk
