// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The token ids a step adds, as a node's resources see them (mstar_step_decl_t.input_tokens):
// the node's token input (mstar_submodule_info_t.token_input) as the step received it, passed
// on only when it is exactly what the ABI promises (1-D, contiguous, int32 or int64, in host
// memory, one value per token the step adds), so a resource may read it without checks.
#pragma once

#include <string>
#include <vector>

#include "host/tensor_objects.h"
#include "mstar/tensor.h"

namespace mstar {

// Request's token input among its step inputs, or nullptr (no token input named, not given, or
// not one tensor of num_tokens values a resource may read). Borrowed from inputs.
const mstar_tensor_t* TokenInputOf(const mstar_tensor_map& inputs, const std::string& name,
                                   uint32_t num_tokens);

// The same for the requests of a columnar step: each request's rows of the stacked input,
// as views into it. Views() holds one entry per request (nullptr where unknown); they borrow
// from inputs and stay valid until the next Build.
class RowTokenInputs {
 public:
  // inputs and input_rows: the step's columnar inputs (rows of request i at input_rows'
  // offsets); num_tokens[i]: what prepare gave request i.
  void Build(const mstar_tensor_map& inputs, const mstar_tensor_map& input_rows,
             const std::string& name, const std::vector<uint32_t>& num_tokens);
  const std::vector<const mstar_tensor_t*>& views() const { return pointers_; }

 private:
  std::vector<mstar_tensor_t> views_;
  std::vector<std::vector<int64_t>> dims_;  // each view's shape (RowView)
  std::vector<const mstar_tensor_t*> pointers_;
};

}  // namespace mstar
