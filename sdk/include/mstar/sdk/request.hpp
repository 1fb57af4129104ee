// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Read-only views of what the host says about requests and steps (mstar/request.h).
#pragma once

#include <cstddef>
#include <string_view>

#include "mstar/sdk/config.hpp"
#include "mstar/sdk/tensor.hpp"

namespace mstar::sdk {

class RequestInfo {
 public:
  RequestInfo(const mstar_host_api_t* host, const mstar_request_info_t* info)
      : host_(host), info_(info) {}

  mstar_request_id_t id() const { return info_->request_id; }
  std::string_view walk() const { return info_->walk; }
  std::string_view partition() const { return info_->partition; }
  uint64_t seed() const { return info_->seed; }
  int32_t priority() const { return info_->priority; }
  uint32_t num_loops() const { return info_->num_loops; }
  std::string_view loop_name(uint32_t i) const { return info_->loop_names[i]; }
  uint32_t loop_iteration(uint32_t i) const { return info_->loop_iterations[i]; }
  uint32_t loop_max_iterations(uint32_t i) const { return info_->loop_max_iterations[i]; }
  // Index of the loop called name among the enclosing loops, or -1.
  int loop_index(std::string_view name) const {
    for (uint32_t i = 0; i < info_->num_loops; ++i) {
      if (name == info_->loop_names[i]) return static_cast<int>(i);
    }
    return -1;
  }
  // The request's parameters (sampling, limits).
  Config params() const { return Config(host_, info_->params); }
  // Whether the chunk this step consumes is its stream's last (MSTAR_REQUEST_FINAL_CHUNK; always
  // false from a host older than ABI 1.4, which does not say).
  bool final_chunk() const {
    return info_->struct_version >= 4 && (info_->flags & MSTAR_REQUEST_FINAL_CHUNK) != 0;
  }
  // Whether the host says which chunk is a stream's last (ABI 1.4 or newer).
  bool tells_final_chunk() const { return info_->struct_version >= 4; }
  const mstar_request_info_t* raw() const { return info_; }

 private:
  const mstar_host_api_t* host_;
  const mstar_request_info_t* info_;
};

// The rows of one name in a columnar step: request i owns rows [begin(i), end(i)) along the
// first dimension of the name's tensor. Borrows the step's offsets.
class RowSpans {
 public:
  explicit RowSpans(const int64_t* offsets) : offsets_(offsets) {}
  int64_t begin(uint32_t i) const { return offsets_ != nullptr ? offsets_[i] : int64_t{i}; }
  int64_t end(uint32_t i) const { return begin(i + 1); }
  int64_t count(uint32_t i) const { return end(i) - begin(i); }

 private:
  const int64_t* offsets_;  // null: one row per request
};

// The rows of name given by a rows map (mstar/request.h): its offsets, or one row per request.
inline RowSpans RowsOf(const TensorMapView& rows, const char* name) {
  if (rows.raw() == nullptr) return RowSpans(nullptr);
  TensorView offsets = rows.get(name);
  return RowSpans(offsets.valid() ? offsets.data<int64_t>() : nullptr);
}

// A step as the submodule's forward sees it.
class Step {
 public:
  Step(const mstar_host_api_t* host, const mstar_step_t* step) : host_(host), step_(step) {}

  std::string_view node() const { return step_->node; }
  std::string_view walk() const { return step_->walk; }
  uint32_t size() const { return step_->num_requests; }
  RequestInfo request(uint32_t i) const { return RequestInfo(host_, step_->requests[i]); }
  TensorMapView inputs(uint32_t i) const { return TensorMapView(host_, step_->inputs[i]); }
  uint32_t num_tokens(uint32_t i) const { return step_->num_tokens[i]; }
  TensorMapRef outputs(uint32_t i) const { return TensorMapRef(host_, step_->outputs[i]); }
  // The planned view of the resource labelled label; throws NOT_FOUND when the node has none.
  TensorMapView resource(std::string_view label) const {
    for (uint32_t i = 0; i < step_->num_resources; ++i) {
      if (label == step_->resources[i].label)
        return TensorMapView(host_, step_->resources[i].tensors);
    }
    throw NotFound("this node has no resource '" + std::string(label) + "'");
  }
  mstar_stream_t* stream() const { return step_->stream; }
  int32_t slot() const { return step_->slot; }
  bool capturing() const { return step_->capturing != 0; }
  const mstar_step_t* raw() const { return step_; }

  // The columnar form (MSTAR_SUBMODULE_COLUMNAR, see Submodule::ForwardColumnar): inputs and
  // outputs as one tensor per name, the rows of every request stacked in request order.
  bool columnar() const {
    return step_->struct_version >= 1 &&
           step_->struct_size >= offsetof(mstar_step_t, output_rows) + sizeof(void*) &&
           step_->columnar_inputs != nullptr;
  }
  TensorMapView columnar_inputs() const { return TensorMapView(host_, step_->columnar_inputs); }
  // Rows of input name per request (one each unless the host listed offsets).
  RowSpans input_rows(const char* name) const {
    return RowsOf(TensorMapView(host_, step_->input_rows), name);
  }
  // PrepareColumnar's common case: hands columnar input name on to the forward as it is (a
  // reference to it into prepared, and its offsets, when listed, into rows).
  void PassInput(const char* name, TensorMapRef prepared, TensorMapRef rows) const {
    prepared.append(name, Tensor::Share(host_, columnar_inputs().require(name)));
    TensorView offsets = TensorMapView(host_, step_->input_rows).get(name);
    if (offsets.valid()) rows.append(name, Tensor::Share(host_, offsets));
  }
  // Where the forward appends one tensor per output name.
  TensorMapRef columnar_outputs() const { return TensorMapRef(host_, step_->columnar_outputs); }
  // Where the forward appends, for each output whose rows per request are not exactly one, an
  // int64 tensor of size() + 1 offsets from 0 (FromVector<int64_t>(offsets)).
  TensorMapRef output_rows() const { return TensorMapRef(host_, step_->output_rows); }

 private:
  const mstar_host_api_t* host_;
  const mstar_step_t* step_;
};

// A step as resources see it.
class StepDecl {
 public:
  StepDecl(const mstar_host_api_t* host, const mstar_step_decl_t* decl)
      : host_(host), decl_(decl) {}

  std::string_view node() const { return decl_->node; }
  std::string_view walk() const { return decl_->walk; }
  uint32_t size() const { return decl_->num_requests; }
  mstar_request_id_t id(uint32_t i) const { return decl_->request_ids[i]; }
  uint32_t num_tokens(uint32_t i) const { return decl_->num_tokens[i]; }
  RequestInfo request(uint32_t i) const { return RequestInfo(host_, decl_->requests[i]); }
  int32_t slot() const { return decl_->slot; }
  bool preplan() const { return decl_->preplan != 0; }
  // Request i's token ids for this step (num_tokens(i) int32 or int64 values in host memory),
  // or an invalid view when the host did not give them (unknown, or a host older than ABI 1.3).
  TensorView input_tokens(uint32_t i) const {
    constexpr size_t kEnd = offsetof(mstar_step_decl_t, input_tokens) + sizeof(void*);
    if (decl_->struct_size < kEnd || decl_->struct_version < 3 || decl_->input_tokens == nullptr)
      return TensorView();
    return TensorView(decl_->input_tokens[i]);
  }
  const mstar_step_decl_t* raw() const { return decl_; }

 private:
  const mstar_host_api_t* host_;
  const mstar_step_decl_t* decl_;
};

}  // namespace mstar::sdk
