// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/input_tokens.h"

#include "device/device.h"
#include "plugin/columnar.h"

namespace mstar {
namespace {

bool IsTokenDtype(const DLDataType& t) {
  return t.code == kDLInt && t.lanes == 1 && (t.bits == 32 || t.bits == 64);
}

// Whether t is what mstar_step_decl_t.input_tokens promises for a step of num_tokens tokens.
bool ReadableTokens(const mstar_tensor_t& t, uint32_t num_tokens) {
  const DLTensor& dl = t.dl;
  if (dl.ndim != 1 || dl.shape[0] != static_cast<int64_t>(num_tokens)) return false;
  if (!IsTokenDtype(dl.dtype) || !IsHostDevice(dl.device)) return false;
  return dl.shape[0] <= 1 || dl.strides == nullptr || dl.strides[0] == 1;
}

}  // namespace

const mstar_tensor_t* TokenInputOf(const mstar_tensor_map& inputs, const std::string& name,
                                   uint32_t num_tokens) {
  if (name.empty()) return nullptr;
  const mstar_tensor_map::Entry* entry = inputs.Find(name);
  if (entry == nullptr || entry->tensors.size() != 1) return nullptr;
  const mstar_tensor_t* t = entry->tensors.front();
  return ReadableTokens(*t, num_tokens) ? t : nullptr;
}

void RowTokenInputs::Build(const mstar_tensor_map& inputs, const mstar_tensor_map& input_rows,
                           const std::string& name, const std::vector<uint32_t>& num_tokens) {
  const size_t n = num_tokens.size();
  pointers_.assign(n, nullptr);
  const mstar_tensor_map::Entry* entry = name.empty() ? nullptr : inputs.Find(name);
  if (entry == nullptr || entry->tensors.size() != 1) return;
  const mstar_tensor_t& stacked = *entry->tensors.front();
  if (stacked.dl.ndim != 1) return;
  const RowOffsets offsets(input_rows, name, static_cast<uint32_t>(n));
  views_.resize(n);
  dims_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto request = static_cast<uint32_t>(i);
    RowView(stacked, offsets.begin(request), offsets.count(request), &views_[i], &dims_[i]);
    if (ReadableTokens(views_[i], num_tokens[i])) pointers_[i] = &views_[i];
  }
}

}  // namespace mstar
