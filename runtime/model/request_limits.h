// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The request parameters that bound a request's work: max_tokens, and each loop's
// max_iterations_param. A client's value for one of them must be an integer in its range, checked
// when the request is submitted (and by the CLI before it loads the model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config_tree.h"
#include "core/status.h"
#include "model/model_spec.h"

namespace mstar {

struct RequestLimit {
  std::string name;  // the top-level request parameter
  int64_t least = 0;
  int64_t most = 0;
};

// max_tokens (at least 1: a request that may output nothing would still feed its streams, the
// prefill's token to a codec, while its client gets no token), then each loop's
// max_iterations_param in walk order, each once.
std::vector<RequestLimit> RequestLimits(const ModelSpec& model);

// InvalidArgument naming the parameter when one of limits is given but is not an integer, or is
// out of its range.
Status CheckRequestLimits(const std::vector<RequestLimit>& limits, const ConfigTree& params);

}  // namespace mstar
