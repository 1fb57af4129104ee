// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// cap_region: a batched submodule whose forward runs one piecewise region, for the engine's
// region capture tests (no LibTorch). Each request's token is the last element of its "tokens"
// input. The forward builds the region's inputs for the batch of B requests,
//   x      int64 [B, width]  x[i][j] = token_i + j
//   scale  int64 [B]         scale[i] = token_i % 3 + 1
// launches region "affine" through region_launch, whose output is
//   y      int64 [B, width]  y[i][j] = x[i][j] * scale[i] + 7
// and emits per request "token" = [y[i][0] % 1000] and "y" = row i of y.
//
// Config:
//   region_walks = ["decode"]   one region config per walk (capture and replay walk)
//   region_buckets = [1, 2, 4]  its batch sizes (BatchBuckets)
//   region_slots = 0            slots per bucket (0: the host's default)
//   width = 2
//   wide_token = 0              a batch holding this token launches x with width + 1 columns
//   wide_dummy_rows = 0         a forward over that many of the engine's dummy requests (warmup:
//                               the run that shows a region bucket its inputs) launches x with
//                               width + 1 columns, so that bucket's graph has other shapes
//   fail_region = false         run_region fails while a region capture is in progress
//   skip_region = false         the forward computes y itself (never launches the region)
// capture_begin checks it is told which region it captures and that captures never nest.
#include <algorithm>
#include <string>
#include <vector>

#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;

constexpr const char* kRegion = "affine";

class CapRegion final : public Submodule {
 public:
  explicit CapRegion(const mstar_create_args_t& args) : Submodule(args) {
    width_ = std::max<int64_t>(1, config().get("width", int64_t{2}));
    wide_token_ = config().get("wide_token", int64_t{0});
    wide_dummy_rows_ = config().get("wide_dummy_rows", int64_t{0});
    fail_region_ = config().get("fail_region", false);
    skip_region_ = config().get("skip_region", false);
    Config walks = config()["region_walks"];
    std::vector<std::string> names;
    if (walks.exists()) {
      for (uint32_t w = 0; w < walks.size(); ++w) names.push_back(walks.at(w).as_string());
    } else {
      names.push_back("decode");
    }
    uint32_t slots =
        static_cast<uint32_t>(std::max<int64_t>(0, config().get("region_slots", int64_t{0})));
    for (const std::string& walk : names) {
      CaptureConfig c;
      c.capture_walk = walk;
      c.region = kRegion;
      c.num_slots = slots;
      c.buckets = BatchBuckets(config(), "region_buckets", {1, 2, 4});
      captures_.push_back(std::move(c));
    }
  }

  SubmoduleInfo Info() override { return {MSTAR_SUBMODULE_DETERMINISTIC, {"token"}}; }
  std::vector<CaptureConfig> CaptureConfigs() override { return captures_; }
  void CaptureBegin(const mstar_capture_info_t& capture) override {
    if (capture.region == nullptr || std::string(capture.region) != kRegion)
      throw FailedPrecondition("capture_begin without the region it captures");
    if (capturing_) throw FailedPrecondition("capture_begin twice without capture_end");
    capturing_ = true;
  }
  void CaptureEnd(const mstar_capture_info_t& capture) override {
    (void)capture;
    capturing_ = false;
  }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    (void)request;
    TensorView tokens = inputs.require("tokens");
    tokens.RequireHostVector<int64_t>("input 'tokens'");
    out.tensors.append("tokens", Tensor::Share(host(), tokens));
    out.num_tokens = static_cast<uint32_t>(tokens.numel());
  }

  void Forward(const Step& step) override { Run(step); }
  void ForwardBatched(const Step& step) override { Run(step); }

  void RunRegion(std::string_view region, const TensorMapView& inputs, TensorMapRef outputs,
                 mstar_stream_t* stream) override {
    (void)stream;
    if (region != kRegion) throw NotFound("no region '" + std::string(region) + "'");
    if (fail_region_ && capturing_) throw Internal("fail_region is set");
    TensorView x = inputs.require("x");
    TensorView scale = inputs.require("scale");
    x.RequireHost<int64_t>("region input 'x'");
    scale.RequireHost<int64_t>("region input 'scale'");
    std::vector<int64_t> shape = x.shape();
    if (shape.size() != 2 || scale.numel() != shape[0])
      throw InvalidArgument("region inputs x [B, W] and scale [B] disagree");
    outputs.append("y", Affine(x, scale));
  }

 private:
  Tensor Affine(const TensorView& x, const TensorView& scale) const {
    std::vector<int64_t> shape = x.shape();
    std::vector<int64_t> y(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < shape[0]; ++i) {
      for (int64_t j = 0; j < shape[1]; ++j) {
        size_t k = static_cast<size_t>(i * shape[1] + j);
        y[k] = x.data<int64_t>()[k] * scale.data<int64_t>()[i] + 7;
      }
    }
    return FromVector(y, shape);
  }

  // Whether every request of step is one of the engine's warmup dummies (ids from 2^62 on).
  static bool AllDummies(const Step& step) {
    for (uint32_t i = 0; i < step.size(); ++i) {
      if (step.request(i).id() < (mstar_request_id_t{1} << 62)) return false;
    }
    return true;
  }

  void Run(const Step& step) {
    const int64_t rows = step.size();
    std::vector<int64_t> tokens;
    for (uint32_t i = 0; i < step.size(); ++i) {
      TensorView t = step.inputs(i).require("tokens");
      tokens.push_back(t.data<int64_t>()[t.numel() - 1]);
    }
    bool wide = wide_token_ != 0 && std::count(tokens.begin(), tokens.end(), wide_token_) > 0;
    if (rows == wide_dummy_rows_ && AllDummies(step)) wide = true;
    const int64_t width = width_ + (wide ? 1 : 0);
    std::vector<int64_t> x, scale;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < width; ++j) x.push_back(tokens[static_cast<size_t>(i)] + j);
      scale.push_back(tokens[static_cast<size_t>(i)] % 3 + 1);
    }
    TensorMap inputs(host());
    inputs.ref().append("x", FromVector(x, {rows, width}));
    inputs.ref().append("scale", FromVector(scale));
    TensorMap outputs(host());
    if (skip_region_) {
      outputs.ref().append("y", Affine(inputs.view().require("x"), inputs.view().require("scale")));
    } else {
      LaunchRegion(kRegion, inputs.view(), outputs.ref(), step.stream());
    }
    TensorView y = outputs.view().require("y");
    if (y.shape() != std::vector<int64_t>{rows, width})
      throw Internal("region output 'y' has the wrong shape");
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t* row = y.data<int64_t>() + i * width;
      TensorMapRef out = step.outputs(static_cast<uint32_t>(i));
      out.append("token", FromVector<int64_t>({row[0] % 1000}));
      out.append("y", FromVector(std::vector<int64_t>(row, row + width)));
    }
  }

  int64_t width_ = 2;
  int64_t wide_token_ = 0;
  int64_t wide_dummy_rows_ = 0;
  bool fail_region_ = false;
  bool skip_region_ = false;
  bool capturing_ = false;
  std::vector<CaptureConfig> captures_;
};

}  // namespace

MSTAR_PLUGIN("cap_region", 0, SubmoduleFactory<CapRegion>("cap_region"));
