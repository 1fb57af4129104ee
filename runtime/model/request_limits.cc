// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/request_limits.h"

#include <algorithm>

namespace mstar {
namespace {

void AddLoopLimits(const SectionSpec& section, std::vector<RequestLimit>* limits) {
  if (section.kind == SectionSpec::Kind::kLoop && !section.max_iterations_param.empty()) {
    const std::string& name = section.max_iterations_param;
    bool listed = std::any_of(limits->begin(), limits->end(),
                              [&](const RequestLimit& limit) { return limit.name == name; });
    if (!listed) limits->push_back({name, 0, kMaxLoopIterations});
  }
  for (const SectionSpec& child : section.children) AddLoopLimits(child, limits);
}

}  // namespace

std::vector<RequestLimit> RequestLimits(const ModelSpec& model) {
  std::vector<RequestLimit> limits{{"max_tokens", 1, kMaxOutputTokens}};
  for (const auto& [name, walk] : model.walks) AddLoopLimits(walk.run, &limits);
  return limits;
}

Status CheckRequestLimits(const std::vector<RequestLimit>& limits, const ConfigTree& params) {
  for (const RequestLimit& limit : limits) {
    const toml::node* node = params.table().get(limit.name);
    if (node == nullptr) continue;
    // Appended: GCC 12 at -O3 warns (-Wrestrict, wrongly) on a literal plus a temporary.
    std::string range = "[";
    range.append(std::to_string(limit.least)).append(", ");
    range.append(std::to_string(limit.most)).append("]");
    if (!node->is_integer()) {
      return InvalidArgument(std::string("request parameter '")
                                 .append(limit.name)
                                 .append("' must be an integer in ")
                                 .append(range));
    }
    const int64_t value = node->as_integer()->get();
    if (value >= limit.least && value <= limit.most) continue;
    return InvalidArgument(std::string("request parameter '")
                               .append(limit.name)
                               .append("' must be in ")
                               .append(range)
                               .append(", got ")
                               .append(std::to_string(value)));
  }
  return Status::Ok();
}

}  // namespace mstar
