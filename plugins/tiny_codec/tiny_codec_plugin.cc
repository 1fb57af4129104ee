// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tiny_codec plugin: submodule `tiny_codec`, a stream consumer that turns windows of audio
// tokens into PCM.
//
// Config (the node's table in the model manifest):
//   weights       directory with config.json and model.safetensors (required; see
//                 ResolveWeightsDir for how a relative path is found)
//   stride        the feeding stream's stride (sliding_window) or size (fixed) (required)
//   token_offset  code = (token - token_offset) mod codebook_size (default 0)
//   batch_invariant  true (default): ForwardBatched decodes each chunk on its own, so a request's
//                 samples are bit-identical whatever else is in its step; false: chunks of equal
//                 length decode as one [B, n] batch, faster on wide batches, but ATen may then pick
//                 another convolution kernel (on CPU, oneDNN for B > 1), which changes the last
//                 bits of the samples.
// Input  `chunk`  int64 [n], host memory: a window of tokens from the stream.
// Output `pcm`    float32 [fresh * samples_per_token], host memory: the samples of the chunk's
//                 fresh tokens only (those no earlier chunk of the request held; see
//                 overlap_tracker.h), decoded with the whole chunk as context. Concatenated over a
//                 request's chunks it holds exactly samples_per_token samples per streamed token.
//
// Per-request state is the overlap bookkeeping; it changes only when a forward succeeds and is
// dropped by cleanup_request.
#include <ATen/ATen.h>

#include <map>
#include <vector>

#include "codec_model.h"
#include "mstar/sdk.hpp"
#include "mstar/sdk/torch.hpp"
#include "overlap_tracker.h"
#include "weights_file.h"

namespace mstar::tiny_codec {
namespace {

using namespace mstar::sdk;

int64_t RequirePositive(const Config& config, const char* key) {
  Config value = config.require(key);
  int64_t v = value.as_int();
  if (v < 1) throw InvalidArgument(value.where() + ": must be at least 1");
  return v;
}

class TinyCodec final : public Submodule {
 public:
  explicit TinyCodec(const mstar_create_args_t& args)
      : Submodule(args),
        model_(CodecModel::Load(
            ResolveWeightsDir(config().require("weights").as_string(), args.base_dir),
            ToTorchDevice(device()))),
        tracker_(RequirePositive(config(), "stride")) {
    token_offset_ = config().get("token_offset", int64_t{0});
    batch_invariant_ = config().get("batch_invariant", true);
  }

  SubmoduleInfo Info() override { return {MSTAR_SUBMODULE_DETERMINISTIC, {}}; }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    (void)request;
    TensorView chunk = inputs.require("chunk");
    chunk.RequireHost<int64_t>("input 'chunk'");
    if (chunk.ndim() != 1 || chunk.numel() == 0)
      throw InvalidArgument("input 'chunk' must be a non-empty 1-D tensor of tokens");
    out.tensors.append("chunk", Tensor::Share(host(), chunk));
    out.num_tokens = static_cast<uint32_t>(chunk.numel());
  }

  void Forward(const Step& step) override { Run(step); }
  void ForwardBatched(const Step& step) override { Run(step); }

  void CleanupRequest(mstar_request_id_t request_id) override { tracker_.Forget(request_id); }

 private:
  // Decodes every request's chunk, then writes the outputs, then commits the bookkeeping, so a
  // failure changes no state.
  void Run(const Step& step) {
    const CodecConfig& c = model_.config();
    const uint32_t count = step.size();
    std::vector<OverlapTracker::Cut> cuts(count);
    std::vector<at::Tensor> codes(count);
    // Groups of chunks decoded together: one chunk each, or every chunk of one length.
    std::map<int64_t, std::vector<uint32_t>> groups;
    for (uint32_t i = 0; i < count; ++i) {
      TensorView chunk = step.inputs(i).require("chunk");
      cuts[i] = tracker_.Next(step.request(i).id(), chunk.numel());
      at::Tensor tokens = ToTorch(host(), chunk);
      codes[i] = at::remainder(tokens - token_offset_, c.codebook_size);
      groups[batch_invariant_ ? i : chunk.numel()].push_back(i);
    }
    std::vector<at::Tensor> pcm(count);
    for (const auto& [key, members] : groups) {
      const int64_t length = codes[members[0]].numel();
      std::vector<at::Tensor> rows;
      for (uint32_t i : members) rows.push_back(codes[i]);
      at::Tensor decoded = model_.Decode(at::stack(rows).to(model_.device()));
      for (size_t m = 0; m < members.size(); ++m) {
        uint32_t i = members[m];
        pcm[i] = decoded[static_cast<int64_t>(m)].narrow(
            0, (length - cuts[i].fresh) * c.samples_per_token, cuts[i].fresh * c.samples_per_token);
      }
    }
    for (uint32_t i = 0; i < count; ++i) {
      Tensor out = AllocOn(DLDevice{kDLCPU, 0}, DTypeOf<float>(), {pcm[i].numel()});
      if (pcm[i].numel() > 0) ToTorch(host(), out).copy_(pcm[i]);
      step.outputs(i).append("pcm", std::move(out));
    }
    for (uint32_t i = 0; i < count; ++i)
      tracker_.Commit(step.request(i).id(), cuts[i], step.inputs(i).require("chunk").numel());
  }

  CodecModel model_;
  OverlapTracker tracker_;
  int64_t token_offset_ = 0;
  bool batch_invariant_ = true;
};

}  // namespace
}  // namespace mstar::tiny_codec

MSTAR_PLUGIN("tiny_codec", 0,
             mstar::sdk::SubmoduleFactory<mstar::tiny_codec::TinyCodec>("tiny_codec"));
