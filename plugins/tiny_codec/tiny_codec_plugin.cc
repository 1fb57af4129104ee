// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny_codec plugin: submodule `tiny_codec`, a stream consumer that turns windows of audio
// tokens into PCM.
//
// Config (the node's table in the model manifest):
//   weights       directory with config.json and model.safetensors (required; a relative path
//                 resolves against the working directory, then the manifest's directory)
//   stride        the feeding stream's stride (sliding_window) or size (fixed) (required)
//   token_offset  code = (token - token_offset) mod codebook_size (default 0)
//   lookahead     tokens of right context a token's samples wait for (default 0): a chunk emits a
//                 token's samples only once it holds the `lookahead` tokens after it, or is the
//                 stream's final chunk; with lookahead at least the decoder's reach, the streamed
//                 samples equal decoding the whole stream at once (no seams between windows).
//                 Declares MSTAR_SUBMODULE_FINAL_CHUNK, so the host always sends a final chunk.
//   batch_invariant  true (default): ForwardBatched decodes each chunk on its own, so a request's
//                 samples are bit-identical whatever else is in its step; false: chunks of equal
//                 length decode as one [B, n] batch, faster on wide batches, but ATen may then pick
//                 another convolution kernel (on CPU, oneDNN for B > 1), which changes the last
//                 bits of the samples.
//   capture_window  tokens per chunk of a captured step (the stream's window); 0 (default): no
//                 capture configuration
//   capture       with capture_window, publish a capture configuration (default: true on a CUDA
//                 device when kTorchCapturePools, false on CPU, where a "replay" is the eager
//                 forward over padded rows)
//   capture_walk  the walk captured and replayed (default "decode_audio")
//   capture_batch_sizes  its buckets (default [1, 2, 4, 8, 16])
// Input  `chunk`  int64 [n], host memory: a window of tokens from the stream.
// Output `pcm`    float32 [emitted * samples_per_token], host memory: the samples of the tokens
//                 the chunk emits (those no earlier chunk emitted, less the last `lookahead`
//                 unless the chunk is final; see overlap_tracker.h), decoded with the whole chunk
//                 as context. Concatenated over a request's chunks it holds exactly
//                 samples_per_token samples per streamed token.
//
// The forward decodes whole chunks (a captured graph has one output shape per bucket); postprocess
// cuts each request's output to its fresh samples on the host and records the chunk in the overlap
// bookkeeping, the only per-request state, which cleanup_request drops. A chunk whose forward or
// postprocess fails leaves the bookkeeping as it was. On a capture slot, every row must be exactly
// capture_window tokens, and all rows decode as one [rows, window] batch (the batch_invariant=false
// kernels).
#include <ATen/ATen.h>

#include <map>
#include <vector>

#include "codec_model.h"
#include "mstar/sdk.hpp"
#include "mstar/sdk/torch.hpp"
#include "mstar/sdk/torch_capture.hpp"
#include "overlap_tracker.h"
#include "weights_file.h"

namespace mstar::tiny_codec {
namespace {

using namespace mstar::sdk;

constexpr const char* kMakeWeightsHint =
    "run scripts/make-tiny-weights to create the tiny models' weights";

int64_t RequirePositive(const Config& config, const char* key) {
  Config value = config.require(key);
  int64_t v = value.as_int();
  if (v < 1) throw InvalidArgument(value.where() + ": must be at least 1");
  return v;
}

// An optional count (0 when absent).
int64_t RequireNonNegative(const Config& config, const char* key) {
  const int64_t v = config.get(key, int64_t{0});
  if (v < 0) throw InvalidArgument(std::string(key) + " must be >= 0");
  return v;
}

class TinyCodec final : public Submodule {
 public:
  explicit TinyCodec(const mstar_create_args_t& args)
      : Submodule(args),
        model_(CodecModel::Load(config().require("weights").as_directory(
                                    args.base_dir, "weights directory", kMakeWeightsHint),
                                ToTorchDevice(device()))),
        lookahead_(RequireNonNegative(config(), "lookahead")),
        tracker_(RequirePositive(config(), "stride"), lookahead_) {
    token_offset_ = config().get("token_offset", int64_t{0});
    silent_outside_codebook_ = config().get("silent_outside_codebook", false);
    batch_invariant_ = config().get("batch_invariant", true);
    ReadCaptureConfig();
  }

  SubmoduleInfo Info() override {
    const uint32_t final_chunk = lookahead_ > 0 ? MSTAR_SUBMODULE_FINAL_CHUNK : 0u;
    return {MSTAR_SUBMODULE_DETERMINISTIC | final_chunk, {}};
  }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    TensorView chunk = inputs.require("chunk");
    chunk.RequireHost<int64_t>("input 'chunk'");
    if (chunk.ndim() != 1 || chunk.numel() == 0)
      throw InvalidArgument("input 'chunk' must be a non-empty 1-D tensor of tokens");
    if (lookahead_ > 0 && !request.tells_final_chunk())
      throw FailedPrecondition(
          "config 'lookahead' needs a host of ABI 1.4 or newer, which says which chunk is a "
          "stream's last (held-back tokens would never be decoded)");
    // The stride is checked against the chunks themselves: the host does not say where a chunk
    // starts in its stream.
    tracker_.Check(request.id(), chunk.data<int64_t>(), chunk.numel());
    // A captured graph reads device buffers only: with capture on a device, inputs go there.
    if (!captures_.empty() && !model_.device().is_cpu())
      out.tensors.append("chunk", FromTorch(ToTorch(host(), chunk).to(model_.device())));
    else
      out.tensors.append("chunk", Tensor::Share(host(), chunk));
    out.num_tokens = static_cast<uint32_t>(chunk.numel());
  }

  void Forward(const Step& step) override { Run(step); }
  void ForwardBatched(const Step& step) override { Run(step); }

  // Keeps the samples of the tokens the chunk emits (host memory) and records the chunk.
  void Postprocess(const RequestInfo& request, TensorMapRef outputs) override {
    const int64_t per_token = model_.config().samples_per_token;
    TensorView pcm = outputs.require("pcm");
    if (pcm.ndim() != 1 || pcm.numel() % per_token != 0)
      throw Internal("tiny_codec: the forward's 'pcm' is not whole tokens of samples");
    const int64_t rows = pcm.numel() / per_token;
    const OverlapTracker::Cut cut = tracker_.Next(request.id(), rows, request.final_chunk());
    const std::vector<int64_t> kept = SoundingRows(request.id(), rows, cut);
    // The one copy of the samples: into host memory allocated through the host (accounted).
    Tensor fresh = AllocOn(kCpu, DTypeOf<float>(), {static_cast<int64_t>(kept.size()) * per_token});
    if (!kept.empty()) {
      // One copy per run of consecutive rows: all the fresh rows at once when every one sounds.
      at::Tensor from = ToTorch(host(), pcm), to = ToTorch(host(), fresh);
      for (size_t k = 0, end = 0; k < kept.size(); k = end) {
        for (end = k + 1; end < kept.size() && kept[end] == kept[end - 1] + 1;) ++end;
        const auto run = static_cast<int64_t>(end - k) * per_token;
        to.narrow(0, static_cast<int64_t>(k) * per_token, run)
            .copy_(from.narrow(0, kept[k] * per_token, run));
      }
    }
    outputs.remove("pcm");
    outputs.append("pcm", std::move(fresh));
    tracker_.Commit(request.id(), cut, rows);
  }

  std::vector<CaptureConfig> CaptureConfigs() override { return captures_; }
  void CaptureBegin(const mstar_capture_info_t& capture) override {
    if (model_.device().is_cuda()) pools_.Begin(capture, host());
  }
  void CaptureEnd(const mstar_capture_info_t& capture) override {
    if (model_.device().is_cuda()) pools_.End(capture);
  }

  void CleanupRequest(mstar_request_id_t request_id) override { tracker_.Forget(request_id); }

 private:
  // Decodes every request's whole chunk into its "pcm" output (on the model's device);
  // postprocess cuts it to the fresh samples in host memory.
  // Every ATen op of the step runs on the host's stream (the exec stream).
  void Run(const Step& step) {
    TorchStreamScope on_stream(host(), step.stream(), model_.device());
    if (step.slot() >= 0 || step.capturing()) return RunOnSlot(step);
    const CodecConfig& c = model_.config();
    const uint32_t count = step.size();
    std::vector<at::Tensor> codes(count);
    // Groups of chunks decoded together: one chunk each, or every chunk of one length.
    std::map<int64_t, std::vector<uint32_t>> groups;
    for (uint32_t i = 0; i < count; ++i) {
      TensorView chunk = step.inputs(i).require("chunk");
      codes[i] = at::remainder(ToTorch(host(), chunk) - token_offset_, c.codebook_size);
      groups[batch_invariant_ ? i : chunk.numel()].push_back(i);
    }
    std::vector<at::Tensor> pcm(count);
    for (const auto& [key, members] : groups) {
      std::vector<at::Tensor> rows;
      for (uint32_t i : members) rows.push_back(codes[i]);
      at::Tensor decoded = model_.Decode(at::stack(rows).to(model_.device()));
      for (size_t m = 0; m < members.size(); ++m)
        pcm[members[m]] = decoded[static_cast<int64_t>(m)];
    }
    // The decoded batch itself, not a copy: postprocess copies out only the fresh samples.
    for (uint32_t i = 0; i < count; ++i) step.outputs(i).append("pcm", FromTorch(pcm[i]));
  }

  // A step on a capture slot: step.size() real rows, then padding rows, each a chunk of
  // capture_window tokens, decoded as one batch with tensor operations only. The outputs are the
  // decoded batch's rows (while capturing, the graph's own tensors, which the host copies out
  // after each replay).
  void RunOnSlot(const Step& step) {
    const CodecConfig& c = model_.config();
    const uint32_t rows = step.size() + step.raw()->padded_rows;
    std::vector<at::Tensor> chunks(rows);
    for (uint32_t i = 0; i < rows; ++i) {
      TensorView chunk = step.inputs(i).require("chunk");
      if (chunk.numel() != capture_window_) {
        throw InvalidArgument("row " + std::to_string(i) + " of a captured step has a chunk of " +
                              std::to_string(chunk.numel()) + " tokens; capture_window is " +
                              std::to_string(capture_window_));
      }
      chunks[i] = ToTorch(host(), chunk).to(model_.device());
    }
    at::Tensor codes = at::remainder(at::stack(chunks) - token_offset_, c.codebook_size);
    at::Tensor decoded = model_.Decode(codes);
    for (uint32_t i = 0; i < rows; ++i)
      step.outputs(i).append("pcm", FromTorch(decoded[static_cast<int64_t>(i)]));
  }

  // The chunk's rows whose samples the client gets: those the cut emits, less (with
  // silent_outside_codebook) those whose token is no audio token.
  std::vector<int64_t> SoundingRows(uint64_t id, int64_t rows,
                                    const OverlapTracker::Cut& cut) const {
    const std::vector<int64_t>& tokens = tracker_.Pending(id);
    const int64_t codebook = model_.config().codebook_size;
    std::vector<int64_t> kept;
    for (int64_t row = cut.from; row < cut.to; ++row) {
      const bool audio = !silent_outside_codebook_ || static_cast<int64_t>(tokens.size()) != rows ||
                         (tokens[row] >= token_offset_ && tokens[row] - token_offset_ < codebook);
      if (audio) kept.push_back(row);
    }
    return kept;
  }

  void ReadCaptureConfig() {
    capture_window_ = config().get("capture_window", int64_t{0});
    // A bucket's tokens (rows x window) are 32-bit: 65536 tokens a window is far past any stream's.
    if (capture_window_ < 0 || capture_window_ > 65536) {
      throw InvalidArgument(config()["capture_window"].where() +
                            ": must be 0 to 65536 tokens, got " + std::to_string(capture_window_));
    }
    if (capture_window_ == 0 ||
        !config().get("capture", model_.device().is_cuda() && kTorchCapturePools))
      return;
    CaptureConfig capture;
    capture.capture_walk = config().get("capture_walk", "decode_audio");
    capture.buckets =
        BatchBuckets(config(), "capture_batch_sizes", {1, 2, 4, 8, 16}, capture_window_);
    captures_.push_back(std::move(capture));
  }

  CodecModel model_;
  const int64_t lookahead_;  // declared before tracker_, which is made with it
  OverlapTracker tracker_;
  int64_t token_offset_ = 0;
  bool silent_outside_codebook_ = false;
  bool batch_invariant_ = true;
  int64_t capture_window_ = 0;
  std::vector<CaptureConfig> captures_;
  TorchCapturePools pools_;
};

}  // namespace
}  // namespace mstar::tiny_codec

MSTAR_PLUGIN("tiny_codec", 0,
             mstar::sdk::SubmoduleFactory<mstar::tiny_codec::TinyCodec>("tiny_codec"));
