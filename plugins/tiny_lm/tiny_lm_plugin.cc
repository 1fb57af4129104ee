// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny_lm plugin: submodule `tiny_lm`, a Llama / Qwen3 decoder (LibTorch, float32) over the
// paged KV cache of a `kv_paged` resource, with per-request seeded sampling.
//
// Node config:
//   weights   (required) directory with HF config.json and model.safetensors (or a sharded set);
//             relative paths resolve against the working directory, then the manifest's directory
//   kv_label  label of the paged KV resource in the node (default "kv")
//   end_token the stop check ends the innermost loop when the sampled token equals it
//             (default -1: never); it also ends it when the sampled token's position reaches
//             max_position_embeddings (the token is output, but no step could take it in)
//   max_batch most requests in one step (default 0: no cap)
//   capture   publish a capture configuration for the decode walk (default: true on a CUDA
//             device when built against a CUDA LibTorch that can capture, kTorchCapturePools;
//             false on CPU, where a "replay" is the eager forward over a slot's padded rows,
//             which only costs more there). Its kv_paged resource then needs
//             capture_context (the width every captured step attends over).
//   capture_walk         the walk captured and replayed (default "decode")
//   capture_batch_sizes  its buckets (default [1, 2, 4, 8, 16, 32]), one token per row
//   capture_regions      publish each layer's MLP block as a piecewise region "mlp.<layer>"
//             of the capture walk, over the same buckets (default false; not with tensor
//             parallelism): an eager step (one not on a whole-forward capture slot) runs its
//             attention eagerly and each MLP block through the host's region_launch, which
//             replays the block's graph for the batch size when one fits
//   capture_prefill_tokens  token counts (e.g. [64, 256]): each layer's MLP block is also a
//             region "prefill_mlp.<layer>" of the prefill walk, over the step's packed tokens
//             (MSTAR_CAPTURE_PACKED buckets of that many tokens, each at most
//             max_position_embeddings; default: none)
// Captured steps (static_batch.h) take greedy requests only: a request with temperature > 0 has
// capture key 1, which no configuration replays, so it runs eagerly in batches of its own kind.
// Tensor parallelism: an instance created with world_size > 1 (and the group's communicator)
// keeps its rank's share of the heads and of the MLP (tensor_parallel.h) and all-reduces the
// partial sums through the host's comm_all_reduce on the step's stream (where its LibTorch ops
// run, so NCCL's reduction is ordered after the partial sums are computed); its kv_paged resource
// is configured with the rank's KV heads (num_key_value_heads / world_size).
// Inputs:  tokens int64 [n] (prefill: the prompt; decode: the last sampled token).
// Outputs: tokens int64 [1] (the sampled next token), logits float32 [vocab] (last position),
//          position int64 [1] (the position the sampled token takes: the request's context
//          length), in host memory (postprocess brings a replayed graph's device outputs there).
// Columnar steps (MSTAR_SUBMODULE_COLUMNAR: a cohort's, run when the node has no captures): the
//          same per request, stacked: tokens [B], position [B], logits [B * vocab] with row
//          offsets (vocab rows a request).
// Request params: temperature (0 = greedy, default), top_k, top_p; the request's seed.
// No per-request state is kept: the KV cache lives in the resource.
#include <c10/core/InferenceMode.h>

#include <cstring>
#include <map>
#include <memory>

#include "greedy.h"
#include "kv_view.h"
#include "lm_config.h"
#include "lm_weights.h"
#include "mstar/sdk.hpp"
#include "mstar/sdk/torch.hpp"
#include "mstar/sdk/torch_capture.hpp"
#include "sampler.h"
#include "static_batch.h"
#include "tensor_parallel.h"
#include "transformer.h"

namespace tiny_lm {
namespace {

using namespace mstar::sdk;

constexpr const char* kMakeWeightsHint =
    "run scripts/make-tiny-weights to create the tiny models' weights";

class TinyLm final : public Submodule {
 public:
  explicit TinyLm(const mstar_create_args_t& args) : Submodule(args) {
    dir_ = config().require("weights").as_directory(args.base_dir, "weights directory",
                                                    kMakeWeightsHint);
    kv_label_ = config().get("kv_label", "kv");
    end_token_ = config().get("end_token", int64_t{-1});
    const int64_t max_batch = config().get("max_batch", int64_t{0});
    if (max_batch < 0 || max_batch > UINT32_MAX) {
      throw InvalidArgument(config()["max_batch"].where() +
                            ": must be 0 (no cap) or a number of requests, not " +
                            std::to_string(max_batch));
    }
    max_batch_ = static_cast<uint32_t>(max_batch);
    device_ = ToTorchDevice(device());
    LmConfig lm = ReadLmConfig(dir_ + "/config.json");
    if (end_token_ < -1 || end_token_ >= lm.vocab_size) {
      throw InvalidArgument(config()["end_token"].where() + ": " + std::to_string(end_token_) +
                            " is not a token of the vocabulary (0 to " +
                            std::to_string(lm.vocab_size - 1) + "); -1 for none");
    }
    LmWeights w = LoadLmWeights(lm, dir_, device_);
    PartialSum reduce;
    if (args.world_size > 1) {
      if (args.comm == nullptr) {
        throw InvalidArgument("tiny_lm: world_size " + std::to_string(args.world_size) +
                              " but no communicator was given");
      }
      w = ShardWeights(lm, std::move(w), args.rank, args.world_size);
      lm = ShardConfig(lm, args.world_size);
      reduce = [this](at::Tensor& partial) { AllReduce(partial); };
    }
    model_ = std::make_unique<Transformer>(std::move(lm), std::move(w), std::move(reduce));
    ReadCaptureConfig();
    ReadRegionConfigs(args.world_size);
  }

  // Input "tokens" holds the ids a step adds: the KV cache keys its prefix cache by them.
  SubmoduleInfo Info() override {
    return {.flags = MSTAR_SUBMODULE_DETERMINISTIC,
            .stop_outputs = {"tokens", "position"},  // tokens first: the prefix chains' ids
            .token_input = "tokens"};
  }
  uint32_t MaxBatchSize(std::string_view walk) override {
    (void)walk;
    return max_batch_;
  }

  std::vector<CaptureConfig> CaptureConfigs() override { return captures_; }
  uint64_t CaptureKey(const RequestInfo& request) override {
    return request.params().get("temperature", 0.0) > 0 ? 1 : 0;
  }
  void CaptureBegin(const mstar_capture_info_t& capture) override {
    // Made before the capture starts and kept: every graph reads the same table in place. On
    // the capture's stream, so the replays there come after it.
    {
      TorchStreamScope on_stream(host(), capture.stream, device_);
      StaticRope();
    }
    if (device_.is_cuda()) pools_.Begin(capture, host());
  }
  void CaptureEnd(const mstar_capture_info_t& capture) override {
    if (device_.is_cuda()) pools_.End(capture);
  }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    TensorView tokens = inputs.require("tokens");
    tokens.RequireHostVector<int64_t>("input 'tokens'");
    CheckVocab(tokens);
    CheckLength(request, tokens.numel());
    SamplingOf(request);  // a request with bad parameters fails here, alone
    // A captured graph reads device buffers only: a request its graphs may replay has its
    // inputs there; the others (prefills, sampled decodes) run eagerly, from host tokens.
    if (MayReplay(request))
      out.tensors.append("tokens", FromTorch(ToTorch(host(), tokens).to(device_)));
    else
      out.tensors.append("tokens", Tensor::Share(host(), tokens));
    out.num_tokens = static_cast<uint32_t>(tokens.numel());
    out.capture_key = CaptureKey(request);
  }

  // The columnar form (a cohort's step; never with captures, which run per request): the same
  // checks, the tokens handed on stacked.
  void PrepareColumnar(const Step& step, TensorMapRef prepared, TensorMapRef rows,
                       uint32_t* num_tokens) override {
    TensorView tokens = step.columnar_inputs().require("tokens");
    tokens.RequireHostVector<int64_t>("input 'tokens'");
    CheckVocab(tokens);
    RowSpans spans = step.input_rows("tokens");
    for (uint32_t i = 0; i < step.size(); ++i) {  // before any KV
      CheckLength(step.request(i), spans.count(i));
      SamplingOf(step.request(i));
    }
    for (uint32_t i = 0; i < step.size(); ++i)
      num_tokens[i] = static_cast<uint32_t>(spans.count(i));
    step.PassInput("tokens", prepared, rows);
  }

  void Forward(const Step& step) override { Run(step); }
  void ForwardBatched(const Step& step) override { Run(step); }
  void ForwardColumnar(const Step& step) override { Run(step); }

  // Region "mlp.<layer>": input "x" [rows, hidden], output "x" after the layer's MLP block.
  void RunRegion(std::string_view region, const TensorMapView& inputs, TensorMapRef outputs,
                 mstar_stream_t* stream) override {
    c10::InferenceMode inference;
    TorchStreamScope on_stream(host(), stream, device_);
    const int64_t layer = RegionLayer(region);
    at::Tensor x = ToTorch(host(), inputs.require("x"));
    outputs.append("x", FromTorch(model_->MlpBlock(layer, x)));
  }

  // Outputs of a replayed graph are device tensors (the graph's own, copied out by the host):
  // the token and logits move to host memory here, as an eager step makes them, for the stop
  // check, the client and the next step's input.
  void Postprocess(const RequestInfo& request, TensorMapRef outputs) override {
    (void)request;
    if (!whole_capture_) return;  // eager steps write host outputs already
    for (const char* name : {"tokens", "logits", "position"}) {
      TensorView out = outputs.get(name);
      if (!out.valid() || out.device().device_type == kDLCPU) continue;
      at::Tensor host_copy = ToTorch(host(), out).to(at::kCPU).contiguous();
      outputs.remove(name);
      outputs.append(name, FromTorch(host_copy));
    }
  }

  uint64_t CheckStop(const RequestInfo& request, const TensorMapView& host_outputs) override {
    TensorView token = host_outputs.require("tokens");
    TensorView position = host_outputs.get("position");
    if (token.numel() != 1) return 0;
    return StopMask(request, token.data<int64_t>()[0],
                    position.valid() && position.numel() == 1 ? position.data<int64_t>()[0] : -1);
  }
  void CheckStopColumnar(const Step& step, const TensorMapView& host_outputs,
                         const TensorMapView& rows, uint64_t* masks) override {
    TensorView tokens = host_outputs.require("tokens");
    TensorView positions = host_outputs.get("position");
    RowSpans spans = RowsOf(rows, "tokens");
    const bool have_positions = positions.valid() && positions.numel() == tokens.numel();
    for (uint32_t i = 0; i < step.size(); ++i) {
      const int64_t at = spans.begin(i);
      masks[i] = spans.count(i) == 1 ? StopMask(step.request(i), tokens.data<int64_t>()[at],
                                                have_positions ? positions.data<int64_t>()[at] : -1)
                                     : 0;
    }
  }

 private:
  // Sums partial with the other ranks' in place, on the running step's stream: tiny_lm's ATen
  // ops run on it, so a device all-reduce is ordered after the partial sums and before the
  // residual add that reads the result.
  void AllReduce(at::Tensor& partial) {
    TorchView view(partial);
    Check(host(), host()->comm_all_reduce(args().comm, view.view(), view.view(), MSTAR_REDUCE_SUM,
                                          step_stream_));
  }

  // The innermost loop ends when the sampled token is the end token, or when its position
  // (-1: unknown) is past the model's last: a step taking it in would need a context longer than
  // max_position_embeddings. Outside a loop (a prefill that sampled it), the partition ends: no
  // decode loop follows.
  uint64_t StopMask(const RequestInfo& request, int64_t token, int64_t position) const {
    const bool ended = end_token_ >= 0 && token == end_token_;
    const bool full = position >= model_->config().max_position_embeddings;
    if (!ended && !full) return 0;
    if (request.num_loops() == 0) return MSTAR_STOP_PARTITION;
    return uint64_t{1} << (request.num_loops() - 1);
  }

  // A step adding more tokens than the model has positions fails its request here, alone,
  // before anything runs (longer contexts are refused when the step reads its KV view).
  void CheckLength(const RequestInfo& request, int64_t tokens) const {
    const int64_t most = model_->config().max_position_embeddings;
    if (tokens <= most) return;
    throw InvalidArgument("request " + std::to_string(request.id()) + ": " +
                          std::to_string(tokens) + " input tokens exceed the model's " +
                          std::to_string(most) + " positions (max_position_embeddings)");
  }

  void CheckVocab(const TensorView& tokens) const {
    const int64_t vocab = model_->config().vocab_size;
    for (int64_t i = 0; i < tokens.numel(); ++i) {
      int64_t t = tokens.data<int64_t>()[i];
      if (t < 0 || t >= vocab) {
        throw InvalidArgument("input 'tokens' holds " + std::to_string(t) + ", outside [0, " +
                              std::to_string(vocab) + ")");
      }
    }
  }

  // Every ATen op of the step runs on the host's stream (the exec stream), as do the region
  // launches and the all-reduce, so they are ordered with each other and with the host's copies.
  void Run(const Step& step) {
    c10::InferenceMode inference;
    TorchStreamScope on_stream(host(), step.stream(), device_);
    step_stream_ = step.stream();
    if (step.slot() >= 0 || step.capturing()) return RunOnSlot(step);
    PagedBatch batch = ReadPagedBatch(host(), step, kv_label_, model_->config(), device_);
    MlpRunner mlp;
    const std::vector<std::string>* names = nullptr;
    if (!region_names_.empty() && step.walk() == region_walk_) names = &region_names_;
    if (!prefill_region_names_.empty() && step.walk() == "prefill") names = &prefill_region_names_;
    if (names != nullptr) {
      mlp = [&](int64_t layer, const at::Tensor& x) {
        TensorMap in(host()), out(host());
        in.ref().append("x", FromTorch(x));
        LaunchRegion((*names)[static_cast<size_t>(layer)].c_str(), in.view(), out.ref(),
                     step.stream());
        return ToTorch(host(), out.view().require("x"));  // holds a reference: no copy
      };
    }
    at::Tensor logits = model_->Forward(batch, workspace_, mlp).to(at::kCPU).contiguous();
    std::vector<int64_t> positions(step.size());
    for (uint32_t i = 0; i < step.size(); ++i) positions[i] = batch.requests[i].context_len;
    WriteOutputs(step, logits, positions);
  }

  // A step on a capture slot (static_batch.h): step.size() real rows, then padding rows. While
  // capturing, everything stays on the device (greedy tokens by GreedyTokens, greedy.h, in the graph); otherwise
  // the real rows are sampled on the host as in Run, so both paths pick the same tokens.
  void RunOnSlot(const Step& step) {
    PagedBatch batch = ReadStaticBatch(host(), step, kv_label_, model_->config(), device_);
    batch.rope = StaticRope();
    if (batch.rope.size(0) < batch.max_ctx) {
      throw InvalidArgument("a captured step attends over " + std::to_string(batch.max_ctx) +
                            " positions; the model has " + std::to_string(batch.rope.size(0)));
    }
    // One workspace per slot: a graph replays into the buffers it was captured with.
    at::Tensor logits = model_->Forward(batch, slot_workspaces_[step.slot()]);
    if (step.capturing()) {
      at::Tensor next = GreedyTokens(logits);
      at::Tensor kept = logits.clone();
      at::Tensor next_position = batch.positions + 1;
      for (uint32_t i = 0; i < SlotRows(step); ++i) {
        step.outputs(i).append("tokens", FromTorch(next.narrow(0, i, 1)));
        step.outputs(i).append("logits", FromTorch(kept[i]));
        step.outputs(i).append("position", FromTorch(next_position.narrow(0, i, 1)));
      }
      return;
    }
    at::Tensor host_logits = logits.narrow(0, 0, step.size()).to(at::kCPU).contiguous();
    at::Tensor positions = batch.positions.narrow(0, 0, step.size()).to(at::kCPU).contiguous();
    std::vector<int64_t> next_positions(step.size());
    const int64_t* position = positions.data_ptr<int64_t>();
    for (uint32_t i = 0; i < step.size(); ++i) next_positions[i] = position[i] + 1;
    WriteOutputs(step, host_logits, next_positions);
  }

  // Samples each real row's token from host logits [rows, vocab] (position: where the token will
  // go, the sampler's counter) and appends its outputs: per request, or stacked in a columnar step
  // (tokens [B]; logits as B runs of vocab rows, so that each request's are [vocab] either way).
  void WriteOutputs(const Step& step, const at::Tensor& logits,
                    const std::vector<int64_t>& positions) {
    const int64_t vocab = logits.size(1);
    // Sample everything first, so a bad parameter fails the step before any output is written.
    std::vector<int64_t> next = SampleRows(step, logits, positions);
    if (step.columnar()) {
      const int64_t rows = static_cast<int64_t>(step.size());
      Tensor all = AllocOn(kCpu, DTypeOf<float>(), {rows * vocab});
      std::memcpy(all.mutable_data<float>(), logits.data_ptr<float>(),
                  static_cast<size_t>(rows * vocab) * sizeof(float));
      std::vector<int64_t> offsets(step.size() + 1);
      for (size_t i = 0; i < offsets.size(); ++i) offsets[i] = static_cast<int64_t>(i) * vocab;
      step.columnar_outputs().append("tokens", FromVector(next));
      step.columnar_outputs().append("position", FromVector(positions));
      step.columnar_outputs().append("logits", std::move(all));
      step.output_rows().append("logits", FromVector(offsets));
      return;
    }
    for (uint32_t i = 0; i < step.size(); ++i) {
      Tensor row = AllocOn(kCpu, DTypeOf<float>(), {vocab});
      std::memcpy(row.mutable_data<float>(), logits[i].data_ptr<float>(), vocab * sizeof(float));
      step.outputs(i).append("tokens", FromVector<int64_t>({next[i]}));
      step.outputs(i).append("logits", std::move(row));
      step.outputs(i).append("position", FromVector<int64_t>({positions[i]}));
    }
  }

  // The request's sampling parameters, checked: finite, temperature >= 0, top_k >= 0,
  // 0 < top_p <= 1.
  static SamplingParams SamplingOf(const RequestInfo& request) {
    const Config params = request.params();
    SamplingParams p;
    p.temperature = params.get("temperature", 0.0);
    p.top_k = params.get("top_k", int64_t{0});
    p.top_p = params.get("top_p", 1.0);
    if (!(std::isfinite(p.temperature) && p.temperature >= 0) || p.top_k < 0 ||
        !(p.top_p > 0 && p.top_p <= 1)) {
      throw InvalidArgument("request " + std::to_string(request.id()) +
                            ": sampling needs a finite temperature >= 0, top_k >= 0 and "
                            "0 < top_p <= 1 (temperature " +
                            std::to_string(p.temperature) + ", top_k " + std::to_string(p.top_k) +
                            ", top_p " + std::to_string(p.top_p) + ")");
    }
    return p;
  }

  std::vector<int64_t> SampleRows(const Step& step, const at::Tensor& logits,
                                  const std::vector<int64_t>& positions) {
    const int64_t vocab = logits.size(1);
    std::vector<int64_t> next(step.size());
    for (uint32_t i = 0; i < step.size(); ++i) {
      const RequestInfo request = step.request(i);
      const auto position = static_cast<uint64_t>(positions[i]);
      next[i] = SampleToken(logits[i].data_ptr<float>(), vocab, SamplingOf(request), request.seed(),
                            position);
    }
    return next;
  }

  // Whether a step of request may replay a whole-forward graph: on a device, in the captured
  // walk, with the captured key.
  bool MayReplay(const RequestInfo& request) {
    return whole_capture_ && !device_.is_cpu() &&
           request.walk() == captures_.front().capture_walk &&
           CaptureKey(request) == captures_.front().capture_key;
  }

  // The RoPE table of captured steps, made once (before any capture) for every position.
  const at::Tensor& StaticRope() {
    if (!static_rope_.defined())
      static_rope_ = model_->RopeRows(model_->config().max_position_embeddings);
    return static_rope_;
  }

  void ReadCaptureConfig() {
    if (!config().get("capture", device_.is_cuda() && kTorchCapturePools)) return;
    CaptureConfig c;
    c.capture_walk = config().get("capture_walk", "decode");
    c.flags = MSTAR_CAPTURE_SPLIT_BY_KEY;
    c.capture_key = 0;
    c.buckets = BatchBuckets(config(), "capture_batch_sizes", {1, 2, 4, 8, 16, 32});
    captures_.push_back(std::move(c));
    whole_capture_ = true;
  }

  // The layer of region "mlp.<layer>" or "prefill_mlp.<layer>".
  int64_t RegionLayer(std::string_view region) const {
    for (const auto* names : {&region_names_, &prefill_region_names_}) {
      for (size_t l = 0; l < names->size(); ++l) {
        if ((*names)[l] == region) return static_cast<int64_t>(l);
      }
    }
    throw NotFound("tiny_lm: no region '" + std::string(region) + "'");
  }

  void ReadRegionConfigs(uint32_t world_size) {
    ReadPrefillRegionConfigs(world_size);
    if (!config().get("capture_regions", false)) return;
    if (world_size > 1)
      throw InvalidArgument("tiny_lm: capture_regions does not work with tensor parallelism");
    region_walk_ = config().get("capture_walk", "decode");
    std::vector<mstar_capture_bucket_t> buckets =
        BatchBuckets(config(), "capture_batch_sizes", {1, 2, 4, 8, 16, 32});
    AddLayerRegions("mlp.", region_walk_, 0, buckets, &region_names_);
  }

  void ReadPrefillRegionConfigs(uint32_t world_size) {
    Config tokens = config()["capture_prefill_tokens"];
    if (!tokens.exists()) return;
    if (world_size > 1) {
      throw InvalidArgument(
          "tiny_lm: capture_prefill_tokens does not work with tensor parallelism");
    }
    std::vector<mstar_capture_bucket_t> buckets;
    for (uint32_t i = 0; i < tokens.size(); ++i) {
      // Warmup finds a bucket's region inputs with one dummy request of that many tokens.
      const int64_t t = tokens.at(i).as_int(), most = model_->config().max_position_embeddings;
      if (t < 1 || t > most) {
        throw InvalidArgument(tokens.at(i).where() + ": a token bucket must be in [1, " +
                              std::to_string(most) + "] (max_position_embeddings)");
      }
      buckets.push_back({0, static_cast<uint32_t>(t)});  // any number of requests
    }
    AddLayerRegions("prefill_mlp.", "prefill", MSTAR_CAPTURE_PACKED, buckets,
                    &prefill_region_names_);
  }

  // One region configuration per layer's MLP block, named prefix + layer (the names go to
  // *names, by layer), replayed in walk over buckets.
  void AddLayerRegions(const std::string& prefix, const std::string& walk, uint32_t flags,
                       const std::vector<mstar_capture_bucket_t>& buckets,
                       std::vector<std::string>* names) {
    for (int64_t l = 0; l < model_->config().num_layers; ++l) {
      names->push_back(prefix + std::to_string(l));
      CaptureConfig c;
      c.capture_walk = walk;
      c.flags = flags;
      c.region = names->back();
      c.buckets = buckets;
      captures_.push_back(std::move(c));
    }
  }

  std::string dir_;
  std::string kv_label_;
  int64_t end_token_ = -1;
  uint32_t max_batch_ = 0;
  at::Device device_{at::kCPU};
  std::unique_ptr<Transformer> model_;
  Workspace workspace_;  // the host never runs two forwards of one instance at once
  std::vector<CaptureConfig> captures_;
  bool whole_capture_ = false;  // captures_ holds the decode walk's whole-forward configuration
  std::vector<std::string> region_names_;          // by layer, when capture_regions is on
  std::vector<std::string> prefill_region_names_;  // by layer, with capture_prefill_tokens
  std::string region_walk_;
  std::map<int32_t, Workspace> slot_workspaces_;  // by capture slot
  at::Tensor static_rope_;
  TorchCapturePools pools_;
  mstar_stream_t* step_stream_ = nullptr;  // the running step's (AllReduce's stream)
};

}  // namespace
}  // namespace tiny_lm

MSTAR_PLUGIN("tiny_lm", 0, mstar::sdk::SubmoduleFactory<tiny_lm::TinyLm>("tiny_lm"));
