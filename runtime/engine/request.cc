// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/request.h"

#include "host/tensor_objects.h"

namespace mstar {

TensorList& TensorList::operator=(TensorList&& other) noexcept {
  if (this != &other) {
    Clear();
    tensors_ = std::move(other.tensors_);
    other.tensors_.clear();
  }
  return *this;
}

void TensorList::Clear() {
  for (mstar_tensor_t* t : tensors_) ReleaseTensor(t);
  tensors_.clear();
}

TensorList& NamedValues::operator[](std::string_view name) {
  if (const TensorList* found = Find(name)) return const_cast<TensorList&>(*found);
  return entries_.emplace_back(std::string(name), TensorList()).second;
}

const TensorList* NamedValues::Find(std::string_view name) const {
  for (const Entry& entry : entries_) {
    if (entry.first == name) return &entry.second;
  }
  return nullptr;
}

Result<std::vector<mstar_tensor_t*>> TensorList::Share() const {
  std::vector<mstar_tensor_t*> out;
  for (const mstar_tensor_t* t : tensors_) {
    Result<mstar_tensor_t*> shared = ShareTensor(t);
    if (!shared.ok()) {
      for (mstar_tensor_t* done : out) ReleaseTensor(done);
      return shared.status();
    }
    out.push_back(shared.value());
  }
  return out;
}

}  // namespace mstar
