// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The echo plugin: deterministic submodules without LibTorch, for engine tests and the engine
// overhead benchmark.
//
//   echo        The first step of a request takes its tokens (int64, 1-D) as the source and emits
//               the source's first token; each later step emits the next one, `repeat` times over,
//               then `end_token` once, at which point its stop check ends the loop named
//               `stop_loop` (default: the innermost enclosing loop). Outputs: "token" (always one
//               element) and "text" (the same token, or empty at the end).
//   echo_chunk  A stream consumer: emits its "chunk" input unchanged as "chunk".
//
// Per-request state (position in the source) lives in the plugin and is dropped by
// cleanup_request; the counter `requests_held` counts it. A step's state changes only when the
// step succeeds.
//
// For capture tests, echo's config can give it a batched forward and capture configurations:
//   batched = true               forward_batched takes whole batches (MSTAR_SUBMODULE_BATCHED)
//   columnar = true              it also takes columnar steps (MSTAR_SUBMODULE_COLUMNAR)
//   capture_walks = ["decode"]   one capture configuration per walk (none by default)
//   capture_batch_sizes = [...]  its buckets (default 1, 2, 4, 8)
//   capture_tokens = 1           tokens per row of every bucket
//   capture_buckets = [[b, t]]   instead of the two above: buckets of b requests and t tokens
//                                (a row of t / b tokens: the shape of its dummies' inputs)
//   capture_slots = 0            slots per bucket (0: the host's default)
//   capture_packed_tokens = 0    > 0: instead, one PACKED bucket of any batch size (0) holding
//                                that many tokens in all
//   capture_fail = false         capture_begin fails (a capture that cannot be made)
//   capture_split_key = -1       >= 0: the configurations replay only requests of that key
//                                (MSTAR_CAPTURE_SPLIT_BY_KEY; the capture_key hook gives
//                                every request key 0, counted in capture_key_calls)
//   first_batched_fails = false  the first forward_batched fails (the warm-up run before the
//                                first capture, when the node captures)
//   pass_tokens = false          forward_batched also outputs "tokens": the prepared input,
//                                passed through (shared, not copied)
// While capturing, forward_batched checks that it is told so (step.capturing) and counts it.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;

class Echo final : public Submodule {
 public:
  explicit Echo(const mstar_create_args_t& args) : Submodule(args) {
    end_token_ = config().get("end_token", int64_t{0});
    repeat_ = std::max<int64_t>(1, config().get("repeat", int64_t{1}));
    stop_loop_ = config().get("stop_loop", "");
    max_batch_ = static_cast<uint32_t>(std::max<int64_t>(0, config().get("max_batch", int64_t{0})));
    batched_ = config().get("batched", false);
    capture_fail_ = config().get("capture_fail", false);
    first_batched_fails_ = config().get("first_batched_fails", false);
    pass_tokens_ = config().get("pass_tokens", false);
    columnar_ = config().get("columnar", true);
    ReadCaptureConfigs();
  }

  SubmoduleInfo Info() override {
    return {MSTAR_SUBMODULE_DETERMINISTIC | (batched_ ? MSTAR_SUBMODULE_BATCHED : 0u),
            {"token"},
            columnar_};
  }
  std::vector<CaptureConfig> CaptureConfigs() override { return captures_; }
  void CaptureBegin(const mstar_capture_info_t& capture) override {
    if (capture_fail_) throw Internal("capture_fail is set");
    if (capturing_) throw FailedPrecondition("capture_begin twice without capture_end");
    capturing_ = true;
    (void)capture;
  }
  void CaptureEnd(const mstar_capture_info_t& capture) override {
    (void)capture;
    capturing_ = false;
  }
  uint64_t CaptureKey(const RequestInfo&) override {
    AddToCounter("capture_key_calls", 1);
    return 0;
  }
  uint32_t MaxBatchSize(std::string_view walk) override {
    (void)walk;
    return max_batch_;
  }

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    TensorView tokens = inputs.require("tokens");
    tokens.RequireHost<int64_t>("input 'tokens'");
    if (tokens.ndim() != 1) throw InvalidArgument("input 'tokens' must be 1-D");
    auto it = state_.find(request.id());
    if (it == state_.end() && tokens.numel() == 0)
      throw InvalidArgument("the first input of a request is empty");
    out.tensors.append("tokens", Tensor::Share(host(), tokens));
    out.num_tokens = static_cast<uint32_t>(tokens.numel());
  }

  void PrepareColumnar(const Step& step, TensorMapRef prepared, TensorMapRef rows,
                       uint32_t* num_tokens) override {
    TensorView tokens = step.columnar_inputs().require("tokens");
    tokens.RequireHost<int64_t>("input 'tokens'");
    if (tokens.ndim() != 1) throw InvalidArgument("input 'tokens' must be 1-D");
    RowSpans spans = step.input_rows("tokens");
    for (uint32_t i = 0; i < step.size(); ++i) {
      if (spans.count(i) == 0 && state_.count(step.request(i).id()) == 0)
        throw InvalidArgument("the first input of a request is empty");
      num_tokens[i] = static_cast<uint32_t>(spans.count(i));
    }
    step.PassInput("tokens", prepared, rows);
  }

  void Forward(const Step& step) override {
    std::vector<int64_t> tokens = Next(step, 1, [&](uint32_t i) { return Source(step.inputs(i)); });
    Emit(step.outputs(0), tokens[0]);
    Commit(step, 1);
  }
  void ForwardBatched(const Step& step) override {
    CheckCapturing(step);
    if (std::exchange(first_batched_fails_, false)) throw Internal("first_batched_fails is set");
    std::vector<int64_t> tokens =
        Next(step, step.size(), [&](uint32_t i) { return Source(step.inputs(i)); });
    for (uint32_t i = 0; i < step.size(); ++i) {
      Emit(step.outputs(i), tokens[i]);
      if (pass_tokens_)
        step.outputs(i).append("tokens", Tensor::Share(host(), step.inputs(i).require("tokens")));
    }
    Commit(step, step.size());
  }
  // The same as ForwardBatched: "token" is one row per request, "text" zero or one (offsets are
  // given when some request's text is empty).
  void ForwardColumnar(const Step& step) override {
    CheckCapturing(step);
    TensorView input = step.columnar_inputs().require("tokens");
    input.RequireHost<int64_t>("input 'tokens'");
    RowSpans rows = step.input_rows("tokens");
    const int64_t* data = input.data<int64_t>();
    const uint32_t n = step.size();
    std::vector<int64_t> tokens = Next(step, n, [&](uint32_t i) {
      return std::vector<int64_t>(data + rows.begin(i), data + rows.end(i));
    });
    std::vector<int64_t> text;
    std::vector<int64_t> text_rows(n + 1, 0);
    for (uint32_t i = 0; i < n; ++i) {
      if (tokens[i] != end_token_) text.push_back(tokens[i]);
      text_rows[i + 1] = static_cast<int64_t>(text.size());
    }
    const auto count = static_cast<int64_t>(text.size());
    step.columnar_outputs().append("token", FromVector<int64_t>(tokens, {int64_t{n}}));
    step.columnar_outputs().append("text", FromVector<int64_t>(text, {count}));
    if (count != n) step.output_rows().append("text", FromVector<int64_t>(text_rows));
    Commit(step, n);
  }

  uint64_t CheckStop(const RequestInfo& request, const TensorMapView& host_outputs) override {
    TensorView token = host_outputs.require("token");
    if (token.numel() != 1) return 0;
    return StopMask(request, token.data<int64_t>()[0]);
  }
  void CheckStopColumnar(const Step& step, const TensorMapView& host_outputs,
                         const TensorMapView& rows, uint64_t* masks) override {
    TensorView token = host_outputs.require("token");
    RowSpans spans = RowsOf(rows, "token");
    const int64_t* data = token.data<int64_t>();
    for (uint32_t i = 0; i < step.size(); ++i)
      masks[i] = spans.count(i) == 1 ? StopMask(step.request(i), data[spans.begin(i)]) : 0;
  }

  void CleanupRequest(mstar_request_id_t request_id) override {
    if (state_.erase(request_id) != 0) AddToCounter("requests_held", -1);
  }

 private:
  struct State {
    std::vector<int64_t> source;
    int64_t position = 0;
  };

  void CheckCapturing(const Step& step) const {
    if (step.capturing() != capturing_)
      throw FailedPrecondition("forward_batched and capture_begin disagree about capturing");
  }

  uint64_t StopMask(const RequestInfo& request, int64_t token) const {
    if (token != end_token_ || request.num_loops() == 0) return 0;
    if (stop_loop_.empty()) return uint64_t{1} << (request.num_loops() - 1);
    int index = request.loop_index(stop_loop_);
    return index < 0 ? 0 : uint64_t{1} << index;
  }

  static std::vector<int64_t> Source(const TensorMapView& inputs) {
    TensorView input = inputs.require("tokens");
    return std::vector<int64_t>(input.data<int64_t>(), input.data<int64_t>() + input.numel());
  }

  void Emit(TensorMapRef outputs, int64_t token) const {
    outputs.append("token", FromVector<int64_t>({token}));
    outputs.append("text", FromVector<int64_t>(token == end_token_ ? std::vector<int64_t>{}
                                                                   : std::vector<int64_t>{token}));
  }

  // Each request's next token; a request seen for the first time takes source(i) as its source.
  // Nothing changes until Commit, so a failure in between changes nothing.
  template <typename SourceOf>
  std::vector<int64_t> Next(const Step& step, uint32_t n, SourceOf source) {
    std::vector<int64_t> tokens(n);
    fresh_.assign(n, State{});
    for (uint32_t i = 0; i < n; ++i) {
      auto it = state_.find(step.request(i).id());
      const State* state = it != state_.end() ? &it->second : nullptr;
      if (state == nullptr) {
        fresh_[i].source = source(i);
        state = &fresh_[i];
      }
      int64_t length = static_cast<int64_t>(state->source.size());
      tokens[i] =
          state->position < length * repeat_ ? state->source[state->position % length] : end_token_;
    }
    return tokens;
  }

  void Commit(const Step& step, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      auto [it, added] = state_.try_emplace(step.request(i).id());
      if (added) AddToCounter("requests_held", 1);
      State& state = it->second;
      if (!fresh_[i].source.empty()) state = std::move(fresh_[i]);
      ++state.position;
    }
  }

  void ReadCaptureConfigs() {
    Config walks = config()["capture_walks"];
    if (!walks.exists()) return;
    int64_t tokens = std::max<int64_t>(1, config().get("capture_tokens", int64_t{1}));
    split_key_ = config().get("capture_split_key", int64_t{-1});
    uint32_t slots =
        static_cast<uint32_t>(std::max<int64_t>(0, config().get("capture_slots", int64_t{0})));
    for (uint32_t w = 0; w < walks.size(); ++w) {
      CaptureConfig c;
      c.capture_walk = walks.at(w).as_string();
      c.num_slots = slots;
      c.buckets = BatchBuckets(config(), "capture_batch_sizes", {1, 2, 4, 8}, tokens);
      if (Config pairs = config()["capture_buckets"]; pairs.exists()) c.buckets = Pairs(pairs);
      if (int64_t packed = config().get("capture_packed_tokens", int64_t{0}); packed > 0) {
        c.flags |= MSTAR_CAPTURE_PACKED;  // one bucket of any batch size, up to packed tokens
        c.buckets = {{0, static_cast<uint32_t>(packed)}};
      }
      if (split_key_ >= 0) {
        c.flags |= MSTAR_CAPTURE_SPLIT_BY_KEY;
        c.capture_key = static_cast<uint64_t>(split_key_);
      }
      captures_.push_back(std::move(c));
    }
  }

  // capture_buckets: [batch size, tokens] pairs, each in [1, 65536].
  static std::vector<mstar_capture_bucket_t> Pairs(const Config& pairs) {
    std::vector<mstar_capture_bucket_t> buckets;
    for (uint32_t i = 0; i < pairs.size(); ++i) {
      Config pair = pairs.at(i);
      if (pair.size() != 2)
        throw InvalidArgument(pair.where() + ": a bucket is [batch size, tokens]");
      uint32_t values[2];
      for (uint32_t k = 0; k < 2; ++k) {
        int64_t value = pair.at(k).as_int();
        if (value < 1 || value > 65536)
          throw InvalidArgument(pair.at(k).where() + ": must be in [1, 65536]");
        values[k] = static_cast<uint32_t>(value);
      }
      buckets.push_back({values[0], values[1]});
    }
    return buckets;
  }

  int64_t end_token_ = 0;
  int64_t repeat_ = 1;
  std::string stop_loop_;
  uint32_t max_batch_ = 0;
  bool batched_ = false;
  bool capture_fail_ = false;
  int64_t split_key_ = -1;
  bool first_batched_fails_ = false;
  bool pass_tokens_ = false;
  bool capturing_ = false;
  bool columnar_ = true;
  std::vector<State> fresh_;  // Next's sources of first steps, until Commit
  std::vector<CaptureConfig> captures_;
  std::unordered_map<mstar_request_id_t, State> state_;
};

class EchoChunk final : public Submodule {
 public:
  explicit EchoChunk(const mstar_create_args_t& args) : Submodule(args) {}

  void PrepareInputs(const RequestInfo& request, const TensorMapView& inputs,
                     PreparedInputs& out) override {
    (void)request;
    TensorView chunk = inputs.require("chunk");
    out.tensors.append("chunk", Tensor::Share(host(), chunk));
  }
  void Forward(const Step& step) override { Copy(step, 0); }
  void ForwardBatched(const Step& step) override {
    for (uint32_t i = 0; i < step.size(); ++i) Copy(step, i);
  }

 private:
  void Copy(const Step& step, uint32_t i) {
    step.outputs(i).append("chunk", Tensor::Share(host(), step.inputs(i).require("chunk")));
  }
};

}  // namespace

MSTAR_PLUGIN("echo", 0, SubmoduleFactory<Echo>("echo"), SubmoduleFactory<EchoChunk>("echo_chunk"));
