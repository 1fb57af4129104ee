// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The test kit: one small plugin of each kind built with the SDK, so tests can drive every SDK
// adapter through the real ABI and the real loader.
//   kit_add      submodule: tokens (int64) -> tokens + `add` (+ the first element of the optional
//                input `bias`), and `position` (int64 [1]) = the
//                tokens its resource "kv" holds for the request before the step (when the node
//                has that resource), so a lost or duplicated offload shows in the outputs. Stops
//                the loop named `stop_loop` (default: innermost) when the last token reaches
//                `stop_at`. Failure injection: the request whose id is `fail_request` fails at
//                `fail_stage` (prepare, forward, postprocess or stop; default forward);
//                `decline_request` is declined by prepare_inputs. Declares itself deterministic
//                unless `deterministic = false`; `token_input = "tokens"` names its token input
//                (none by default); `vary_after_cleanup` adds to each token the
//                times its request was cleaned up (what a model that does not reproduce its
//                outputs looks like when a request is recomputed). `samples_dtype` ("int16",
//                "uint16" or "float16") adds the output `samples`: the tokens times 256 as that
//                type (float16: the tokens' low byte / 256, as binary16), for audio outputs.
//   kit_columnar submodule: tokens (int64, 1-D) -> tokens + `add` in the per-request and the
//                columnar form (MSTAR_SUBMODULE_COLUMNAR, with prepare_inputs_columnar and
//                check_stop_columnar), no postprocess, no captures: a decode loop of it runs as a
//                cohort. With a resource "kv", `position` as kit_add. `stop_at` and
//                `fail_request` / `fail_stage` (prepare, forward, stop) as kit_add; `fail_walk`
//                limits the failure to one walk; `extra_row` makes the columnar forward write one
//                row too many; `side_floats` adds an output no edge reads, and fails a step run
//                while an earlier step's is still held; `forward_sleep_us` makes each columnar
//                forward take that long (a window for what happens while a step executes);
//                `first_batched_sleep_us` the first forward_batched (a queue kept busy), and
//                `first_batched_gate` makes it wait until that file exists (at most 60 s);
//                `token_input` as kit_add. `final_chunk_add` is added besides to the tokens of a
//                step whose request info is flagged MSTAR_REQUEST_FINAL_CHUNK (a stream's last
//                chunk).
//   kit_counter, kit_memory: the resource and the tier (kit_state.h).
//   kit_model    model: prompt bytes -> tokens; walks prefill -> decode -> done; encodes text
//                outputs (upper case with the request parameter `upper`; "#i" after each
//                chunk for each enclosing loop's iteration i) and audio (float32 token / 256) only; with the request
//                parameter `decode_bias`, gives decode that value as "bias".
//   kit_model_plain  kit_model without output encoding (the host's default encodings apply).
//   kit_model_prompt  prompt bytes -> tokens only: chooses no walk, encodes no output.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kit_state.h"
#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;

class KitAdd final : public Submodule {
 public:
  explicit KitAdd(const mstar_create_args_t& args) : Submodule(args) {
    add_ = config().get("add", int64_t{1});
    stop_at_ = config().get("stop_at", int64_t{-1});
    stop_loop_ = config().get("stop_loop", "");
    fail_request_ = config().get("fail_request", int64_t{-1});
    fail_stage_ = config().get("fail_stage", "forward");
    decline_request_ = config().get("decline_request", int64_t{-1});
    max_batch_ = static_cast<uint32_t>(config().get("max_batch", int64_t{0}));
    vary_ = config().get("vary_after_cleanup", false);
    samples_dtype_ = config().get("samples_dtype", "");
    deterministic_ = config().get("deterministic", true);
    token_input_ = config().get("token_input", "");
  }

  SubmoduleInfo Info() override {
    return {deterministic_ ? MSTAR_SUBMODULE_DETERMINISTIC : 0u, {"tokens"}, true, token_input_};
  }
  uint32_t MaxBatchSize(std::string_view walk) override {
    (void)walk;
    return max_batch_;
  }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    MaybeFail(request.id(), "prepare");
    if (static_cast<int64_t>(request.id()) == decline_request_) {
      out.Decline();
      return;
    }
    TensorView tokens = inputs.require("tokens");
    tokens.RequireHost<int64_t>("input 'tokens'");
    out.tensors.append("tokens", Tensor::Share(host(), tokens));
    if (TensorView bias = inputs.get("bias"); bias.valid())
      out.tensors.append("bias", Tensor::Share(host(), bias));
    out.num_tokens = static_cast<uint32_t>(tokens.numel());
  }

  void Forward(const Step& step) override { Run(step, 0); }
  void ForwardBatched(const Step& step) override {
    for (uint32_t i = 0; i < step.size(); ++i) Run(step, i);
  }

  void Postprocess(const RequestInfo& request, TensorMapRef outputs) override {
    (void)outputs;
    MaybeFail(request.id(), "postprocess");
  }

  uint64_t CheckStop(const RequestInfo& request, const TensorMapView& host_outputs) override {
    MaybeFail(request.id(), "stop");
    TensorView tokens = host_outputs.require("tokens");
    if (stop_at_ < 0 || tokens.numel() == 0 || request.num_loops() == 0) return 0;
    if (tokens.data<int64_t>()[tokens.numel() - 1] < stop_at_) return 0;
    int loop = stop_loop_.empty() ? static_cast<int>(request.num_loops()) - 1
                                  : request.loop_index(stop_loop_);
    return loop < 0 ? 0 : uint64_t{1} << loop;
  }

  std::vector<CaptureConfig> CaptureConfigs() override {
    return {CaptureConfig{
        "decode", {"decode"}, {{1, 1}, {2, 2}, {4, 4}}, MSTAR_CAPTURE_CAPS_BATCH, 2, "", 0}};
  }

  void RunRegion(std::string_view region, const TensorMapView& inputs, TensorMapRef outputs,
                 mstar_stream_t* stream) override {
    (void)stream;
    if (region != "double") throw NotFound("no region '" + std::string(region) + "'");
    TensorView x = inputs.require("x");
    std::vector<int64_t> doubled(x.data<int64_t>(), x.data<int64_t>() + x.numel());
    for (int64_t& v : doubled) v *= 2;
    outputs.append("x", FromVector(doubled));
  }

  void CleanupRequest(mstar_request_id_t request_id) override { cleaned_.push_back(request_id); }

 private:
  void MaybeFail(mstar_request_id_t id, std::string_view stage) const {
    if (static_cast<int64_t>(id) == fail_request_ && stage == fail_stage_) {
      throw InvalidArgument("kit_add fails request " + std::to_string(fail_request_) + " in " +
                            std::string(stage) + " on purpose");
    }
  }

  void Run(const Step& step, uint32_t i) {
    MaybeFail(step.request(i).id(), "forward");
    TensorView in = step.inputs(i).require("tokens");
    std::vector<int64_t> out(in.data<int64_t>(), in.data<int64_t>() + in.numel());
    int64_t add = add_;
    if (TensorView bias = step.inputs(i).get("bias"); bias.valid()) add += bias.data<int64_t>()[0];
    if (vary_) add += std::count(cleaned_.begin(), cleaned_.end(), step.request(i).id());
    for (int64_t& v : out) v += add;
    step.outputs(i).append("tokens", FromVector(out));
    if (!samples_dtype_.empty()) AppendSamples(out, step.outputs(i));
    if (step.raw()->num_resources > 0) {
      TensorView held = step.resource("kv").require("held");
      step.outputs(i).append("position", FromVector<int64_t>({held.data<int64_t>()[i]}));
    }
  }

  void AppendSamples(const std::vector<int64_t>& tokens, TensorMapRef outputs) const {
    std::vector<int16_t> int16;
    std::vector<uint16_t> uint16;
    for (int64_t v : tokens) {
      int16.push_back(static_cast<int16_t>(v * 256));
      // binary16 of (v & 255) / 256: exponent and mantissa of a value in [0, 1).
      const auto low = static_cast<uint16_t>(v & 255);
      uint16_t half = 0;
      if (low != 0) {
        int top = 7;
        while ((low >> top) == 0) --top;  // low = 1.m * 2^top, value = low * 2^-8
        half = static_cast<uint16_t>(((top - 8 + 15) << 10) | ((low << (10 - top)) & 0x3ff));
      }
      uint16.push_back(samples_dtype_ == "float16" ? half : static_cast<uint16_t>(v * 256));
    }
    if (samples_dtype_ == "int16") {
      outputs.append("samples", FromVector(int16));
    } else {
      mstar_tensor_t* t = FromVector(uint16).release();
      if (samples_dtype_ == "float16") t->dl.dtype = DLDataType{kDLFloat, 16, 1};
      outputs.append("samples", Tensor(t));
    }
  }

  int64_t add_ = 1;
  int64_t stop_at_ = -1;
  std::string samples_dtype_;
  std::string stop_loop_;
  int64_t fail_request_ = -1;
  std::string fail_stage_;
  int64_t decline_request_ = -1;
  uint32_t max_batch_ = 0;
  std::vector<mstar_request_id_t> cleaned_;
  bool vary_ = false;  // adds the times its request was cleaned up: not reproducible
  bool deterministic_ = true;
  std::string token_input_;
};

// Turns prompts into tokens and chooses no walk (the manifest's transitions run).
class KitPromptModel : public Model {
 public:
  explicit KitPromptModel(const mstar_create_args_t& args) : Model(args) {}

  // With the request parameters `entered_file` and `go_file`: creates the first, then waits (at
  // most a minute) until the second exists, so that a test can act while the request is made.
  // With `two_dimensional = true` the tokens are one column ([n, 1]) instead of [n].
  void EncodePrompt(const RequestInfo& request, std::string_view prompt,
                    TensorMapRef out) override {
    const Config params = request.params();
    const std::string entered = params.get("entered_file", ""), go = params.get("go_file", "");
    if (!entered.empty()) std::ofstream(entered).put('\n');
    for (int waited_ms = 0; !go.empty() && !std::ifstream(go) && waited_ms < 60000; ++waited_ms)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<int64_t> tokens(prompt.begin(), prompt.end());
    std::vector<int64_t> shape;
    if (params.get("two_dimensional", false)) shape = {static_cast<int64_t>(tokens.size()), 1};
    out.append("tokens", FromVector(tokens, shape));
  }
};

class KitPlainModel : public KitPromptModel {
 public:
  explicit KitPlainModel(const mstar_create_args_t& args) : KitPromptModel(args) {}

  // "prefill"; with the request parameter `first_walk_of` naming a partition, that partition's
  // first walk is the given `first_walk` (e.g. "", which no partition has).
  WalkChoice FirstWalk(const RequestInfo& request, std::string_view partition,
                       TensorMapRef inputs) override {
    (void)inputs;
    const Config params = request.params();
    if (params.get("first_walk_of", "") == partition)
      return WalkChoice::Walk(params.get("first_walk", ""));
    return WalkChoice::Walk("prefill");
  }
  WalkChoice NextWalk(const mstar_walk_state_t& state, TensorMapRef inputs) override {
    if (std::string_view(state.finished_walk) != "prefill") return WalkChoice::Done();
    // With the request parameter `decode_bias`, decode is given it as "bias".
    const int64_t bias =
        RequestInfo(host(), state.request).params().get("decode_bias", int64_t{-1});
    if (bias >= 0) inputs.append("bias", FromVector<int64_t>({bias}));
    return WalkChoice::Walk("decode");
  }
};

class KitModel final : public KitPlainModel {
 public:
  explicit KitModel(const mstar_create_args_t& args) : KitPlainModel(args) {}

  void EncodeOutput(const RequestInfo& request, std::string_view edge, std::string_view modality,
                    const TensorView& tensor, BytesWriter& out) override {
    (void)edge;
    if (modality == "audio") {  // float32 samples: each token / 256
      for (int64_t i = 0; i < tensor.numel(); ++i) {
        const float sample = static_cast<float>(tensor.data<int64_t>()[i]) / 256.0f;
        out.append(&sample, sizeof(sample));
      }
      return;
    }
    if (modality != "text") throw Unsupported("kit_model encodes only text and audio");
    // Reads what the request info points at, as a controller may (gone, under ASan, unless the
    // host keeps it for the encoding).
    const bool upper = request.params().get("upper", false);
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      char c = static_cast<char>(tensor.data<int64_t>()[i]);
      if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      out.append(&c, 1);
    }
    for (uint32_t k = 0; k < request.num_loops(); ++k) {
      std::string mark = "#";
      mark += std::to_string(request.loop_iteration(k));
      out.append(mark.data(), mark.size());
    }
    const mstar_request_info_t* info = request.raw();
    if (info->tenant_salt != nullptr) {  // "@" and the tenant after each output
      out.append("@", 1);
      out.append(info->tenant_salt, info->tenant_salt_size);
    }
  }
};

class KitColumnar final : public Submodule {
 public:
  explicit KitColumnar(const mstar_create_args_t& args) : Submodule(args) {
    add_ = config().get("add", int64_t{1});
    stop_at_ = config().get("stop_at", int64_t{-1});
    fail_request_ = config().get("fail_request", int64_t{-1});
    fail_stage_ = config().get("fail_stage", "forward");
    fail_walk_ = config().get("fail_walk", "");
    extra_row_ = config().get("extra_row", false);
    side_floats_ = config().get("side_floats", int64_t{0});
    forward_sleep_us_ = config().get("forward_sleep_us", int64_t{0});
    stop_after_ = config().get("stop_after", int64_t{-1});
    token_input_ = config().get("token_input", "");
    final_chunk_add_ = config().get("final_chunk_add", int64_t{0});
    first_batched_sleep_us_ = config().get("first_batched_sleep_us", int64_t{0});
    first_batched_gate_ = config().get("first_batched_gate", "");
  }

  // With stop_after, the stop check reads no output (stop_outputs is empty): it ends the
  // innermost loop at that iteration, from the request's info alone.
  SubmoduleInfo Info() override {
    if (stop_after_ >= 0) return {MSTAR_SUBMODULE_DETERMINISTIC, {}, true, token_input_};
    return {MSTAR_SUBMODULE_DETERMINISTIC, {"tokens"}, true, token_input_};
  }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    MaybeFail(request, "prepare");
    TensorView tokens = inputs.require("tokens");
    tokens.RequireHost<int64_t>("input 'tokens'");
    out.tensors.append("tokens", Tensor::Share(host(), tokens));
    out.num_tokens = static_cast<uint32_t>(tokens.numel());
  }
  void PrepareColumnar(const Step& step, TensorMapRef prepared, TensorMapRef rows,
                       uint32_t* num_tokens) override {
    TensorView tokens = step.columnar_inputs().require("tokens");
    tokens.RequireHost<int64_t>("input 'tokens'");
    RowSpans spans = step.input_rows("tokens");
    for (uint32_t i = 0; i < step.size(); ++i) {
      MaybeFail(step.request(i), "prepare");
      num_tokens[i] = static_cast<uint32_t>(spans.count(i));
    }
    step.PassInput("tokens", prepared, rows);
  }

  void Forward(const Step& step) override { Run(step, 0); }
  void ForwardBatched(const Step& step) override {
    if (const int64_t us = std::exchange(first_batched_sleep_us_, 0); us > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    const std::string gate = std::exchange(first_batched_gate_, "");
    for (int waited_ms = 0; !gate.empty() && !std::ifstream(gate) && waited_ms < 60000; ++waited_ms)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (uint32_t i = 0; i < step.size(); ++i) MaybeFail(step.request(i), "forward");
    for (uint32_t i = 0; i < step.size(); ++i) Run(step, i);
  }
  void ForwardColumnar(const Step& step) override {
    if (forward_sleep_us_ > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(forward_sleep_us_));
    for (uint32_t i = 0; i < step.size(); ++i) MaybeFail(step.request(i), "forward");
    TensorView in = step.columnar_inputs().require("tokens");
    std::vector<int64_t> out(in.data<int64_t>(), in.data<int64_t>() + in.numel());
    for (int64_t& v : out) v += add_;
    if (final_chunk_add_ != 0) {
      RowSpans spans = step.input_rows("tokens");
      for (uint32_t i = 0; i < step.size(); ++i) {
        if (!step.request(i).final_chunk()) continue;
        for (int64_t row = spans.begin(i); row < spans.end(i); ++row)
          out[static_cast<size_t>(row)] += final_chunk_add_;
      }
    }
    if (extra_row_) out.push_back(0);  // rows that do not add up, on purpose
    step.columnar_outputs().append("tokens", FromVector(out));
    TensorView offsets = TensorMapView(host(), step.raw()->input_rows).get("tokens");
    if (offsets.valid()) step.output_rows().append("tokens", Tensor::Share(host(), offsets));
    if (step.raw()->num_resources > 0) {  // one row per request: what each held before the step
      TensorView held = step.resource("kv").require("held");
      std::vector<int64_t> position(held.data<int64_t>(), held.data<int64_t>() + step.size());
      step.columnar_outputs().append("position", FromVector(position));
    }
    if (side_floats_ > 0) AppendSide(step);
  }

  uint64_t CheckStop(const RequestInfo& request, const TensorMapView& host_outputs) override {
    MaybeFail(request, "stop");
    if (stop_after_ >= 0) return StopByIteration(request);
    TensorView tokens = host_outputs.require("tokens");
    if (tokens.numel() == 0) return 0;
    return StopMask(request, tokens.data<int64_t>()[tokens.numel() - 1]);
  }
  void CheckStopColumnar(const Step& step, const TensorMapView& host_outputs,
                         const TensorMapView& rows, uint64_t* masks) override {
    if (stop_after_ >= 0) {
      for (uint32_t i = 0; i < step.size(); ++i) masks[i] = StopByIteration(step.request(i));
      return;
    }
    TensorView tokens = host_outputs.require("tokens");
    RowSpans spans = RowsOf(rows, "tokens");
    for (uint32_t i = 0; i < step.size(); ++i) {
      MaybeFail(step.request(i), "stop");
      masks[i] = spans.count(i) == 0
                     ? 0
                     : StopMask(step.request(i), tokens.data<int64_t>()[spans.end(i) - 1]);
    }
  }

 private:
  uint64_t StopByIteration(const RequestInfo& request) const {
    if (request.num_loops() == 0) return 0;
    const uint32_t inner = request.num_loops() - 1;
    return request.loop_iteration(inner) >= static_cast<uint64_t>(stop_after_)
               ? uint64_t{1} << inner
               : 0;
  }
  uint64_t StopMask(const RequestInfo& request, int64_t last) const {
    if (stop_at_ < 0 || request.num_loops() == 0 || last < stop_at_) return 0;
    return uint64_t{1} << (request.num_loops() - 1);
  }
  void Run(const Step& step, uint32_t i) {
    TensorView in = step.inputs(i).require("tokens");
    std::vector<int64_t> out(in.data<int64_t>(), in.data<int64_t>() + in.numel());
    int64_t add = add_;
    if (TensorView bias = step.inputs(i).get("bias"); bias.valid()) add += bias.data<int64_t>()[0];
    if (step.request(i).final_chunk()) add += final_chunk_add_;
    for (int64_t& v : out) v += add;
    step.outputs(i).append("tokens", FromVector(out));
    if (step.raw()->num_resources > 0) {
      TensorView held = step.resource("kv").require("held");
      step.outputs(i).append("position", FromVector<int64_t>({held.data<int64_t>()[i]}));
    }
  }
  void MaybeFail(const RequestInfo& request, std::string_view stage) const {
    if (static_cast<int64_t>(request.id()) == fail_request_ && stage == fail_stage_ &&
        (fail_walk_.empty() || request.walk() == fail_walk_)) {
      throw InvalidArgument("kit_columnar fails request " + std::to_string(fail_request_) + " in " +
                            std::string(stage) + " on purpose");
    }
  }

  // side_floats: each columnar step also outputs "side", side_floats floats per request that no
  // edge reads (as a model's logits). The step fails when one of an earlier step's is still held
  // while it runs (this instance's host memory shows it), as a plain loop would hold none.
  void AppendSide(const Step& step) {
    const uint64_t bytes = static_cast<uint64_t>(side_floats_) * sizeof(float);
    uint64_t used = 0, limit = 0;
    Check(host(), host()->memory_usage(context(), kCpu, &used, &limit));
    if (used >= bytes) {
      throw InvalidArgument(
          "kit_columnar holds " + std::to_string(used) +
          " bytes while a step runs: an earlier step's 'side' output is still held");
    }
    Tensor side =
        AllocOn(kCpu, DTypeOf<float>(), {static_cast<int64_t>(step.size()), side_floats_});
    std::fill_n(side.mutable_data<float>(), step.size() * static_cast<size_t>(side_floats_), 0.0f);
    step.columnar_outputs().append("side", std::move(side));
  }

  int64_t add_ = 1;
  int64_t stop_at_ = -1;
  int64_t fail_request_ = -1;
  std::string fail_stage_;
  std::string fail_walk_;
  bool extra_row_ = false;
  int64_t side_floats_ = 0;
  std::string token_input_;  // Info().token_input (empty: none)
  int64_t forward_sleep_us_ = 0;
  int64_t stop_after_ = -1;  // the stop check ends the innermost loop at this iteration
  int64_t final_chunk_add_ = 0;
  int64_t first_batched_sleep_us_ = 0;
  std::string first_batched_gate_;
};

// The library's shutdown: throws when $MSTAR_KIT_SHUTDOWN_THROWS is set (the SDK's barrier must
// keep it from reaching the host), and does nothing otherwise.
void KitShutdown() {
  if (std::getenv("MSTAR_KIT_SHUTDOWN_THROWS") != nullptr)
    throw std::runtime_error("the kit's shutdown failed, as asked");
}

}  // namespace

MSTAR_PLUGIN_WITH_SHUTDOWN("kit", 0, KitShutdown, SubmoduleFactory<KitAdd>("kit_add"),
                           SubmoduleFactory<KitColumnar>("kit_columnar"),
                           ResourceFactory<mstar::kit::KitCounter>("kit_counter"),
                           TierFactory<mstar::kit::KitMemory>("kit_memory"),
                           ModelFactory<KitModel>("kit_model"),
                           ModelFactory<KitPlainModel>("kit_model_plain"),
                           ModelFactory<KitPromptModel>("kit_model_prompt"));
