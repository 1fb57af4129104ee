// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// StepArrays: the per-request arrays of one step and the ABI structs over them (the resources'
// declaration, the submodule's step), for code that drives plugin hooks directly rather than
// through the engine: the conformance suite and the benchmarks' bare loops.
//
// The structs point into the arrays and into the strings passed to them: all must outlive the
// structs, and the arrays must not change while the structs are in use.
#pragma once

#include <cstdint>
#include <vector>

#include "mstar/abi.h"
#include "mstar/request.h"

namespace mstar {

// An eager step (slot -1) of n requests over the arrays given (borrowed; the result points into
// them), with no inputs, outputs or resources yet: the caller adds the form it runs.
inline mstar_step_t EagerStep(const char* node, const char* walk, uint32_t n,
                              const mstar_request_info_t* const* infos, const uint32_t* tokens) {
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.struct_version = MSTAR_ABI_MINOR;
  step.node = node;
  step.walk = walk;
  step.num_requests = n;
  step.slot = -1;
  step.requests = infos;
  step.num_tokens = tokens;
  return step;
}

struct StepArrays {
  std::vector<const mstar_request_info_t*> infos;
  std::vector<mstar_request_id_t> ids;
  std::vector<const mstar_tensor_map_t*> inputs;  // what prepare_inputs produced
  std::vector<uint32_t> tokens;
  std::vector<mstar_tensor_map_t*> outputs;  // empty maps for the forward to fill

  void Add(const mstar_request_info_t* info, const mstar_tensor_map_t* input, uint32_t num_tokens,
           mstar_tensor_map_t* output) {
    infos.push_back(info);
    ids.push_back(info->request_id);
    inputs.push_back(input);
    tokens.push_back(num_tokens);
    outputs.push_back(output);
  }
  uint32_t size() const { return static_cast<uint32_t>(infos.size()); }

  // An eager step's declaration (slot -1).
  mstar_step_decl_t Decl(const char* node, const char* walk) const {
    mstar_step_decl_t decl{};
    decl.struct_size = sizeof(decl);
    decl.struct_version = MSTAR_ABI_MINOR;
    decl.node = node;
    decl.walk = walk;
    decl.num_requests = size();
    decl.slot = -1;
    decl.request_ids = ids.data();
    decl.num_tokens = tokens.data();
    decl.requests = infos.data();
    return decl;
  }

  // An eager step over at most one resource view (null: none).
  mstar_step_t Step(const char* node, const char* walk, const mstar_resource_view_t* view) const {
    mstar_step_t step = EagerStep(node, walk, size(), infos.data(), tokens.data());
    step.inputs = inputs.data();
    step.num_resources = view != nullptr ? 1 : 0;
    step.resources = view;
    step.outputs = outputs.data();
    return step;
  }
};

}  // namespace mstar
