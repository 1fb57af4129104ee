// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "memory_tier.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "host/services.h"

namespace mstar::conformance {
namespace {

using Key = std::array<uint8_t, 32>;

struct MemoryTier {
  std::map<Key, std::vector<uint8_t>> blocks;
  uint64_t used = 0;
};

// A batch completes on submit; the handle only has to be distinct and freed on release.
struct mstar_tier_batch_done {};

Key KeyOf(const mstar_tier_op_t& op) {
  Key key;
  std::copy(op.key.bytes, op.key.bytes + key.size(), key.begin());
  return key;
}

uint32_t Execute(MemoryTier& tier, mstar_tier_op_t& op) {
  if (op.device.device_type != kDLCPU && op.device.device_type != kDLCUDAHost)
    return MSTAR_ERR_INVALID_ARGUMENT;  // device_access is 0: callers stage through host memory
  auto it = tier.blocks.find(KeyOf(op));
  auto* data = static_cast<uint8_t*>(op.data);
  switch (op.kind) {
    case MSTAR_TIER_OP_CONTAINS: return it == tier.blocks.end() ? MSTAR_ERR_NOT_FOUND : MSTAR_OK;
    case MSTAR_TIER_OP_PUT:
      if (op.size != 0 && data == nullptr) return MSTAR_ERR_INVALID_ARGUMENT;
      if (it != tier.blocks.end()) tier.used -= it->second.size();
      tier.blocks[KeyOf(op)].assign(data, data + op.size);
      tier.used += op.size;
      return MSTAR_OK;
    case MSTAR_TIER_OP_GET:
      if (it == tier.blocks.end()) return MSTAR_ERR_NOT_FOUND;
      if (it->second.size() != op.size || (op.size != 0 && data == nullptr))
        return MSTAR_ERR_INVALID_ARGUMENT;
      std::copy(it->second.begin(), it->second.end(), data);
      return MSTAR_OK;
    case MSTAR_TIER_OP_REMOVE:
      if (it == tier.blocks.end()) return MSTAR_ERR_NOT_FOUND;
      tier.used -= it->second.size();
      tier.blocks.erase(it);
      return MSTAR_OK;
    default: return MSTAR_ERR_UNSUPPORTED;
  }
}

MemoryTier& Self(void* self) {
  return *static_cast<MemoryTier*>(self);
}

mstar_status_t* Info(void* self, mstar_tier_info_t* out) {
  out->capacity_bytes = 0;
  out->used_bytes = Self(self).used;
  out->persistent = 0;
  out->device_access = 0;
  return nullptr;
}

mstar_status_t* Submit(void* self, mstar_tier_op_t* ops, uint32_t count, mstar_stream_t*,
                       mstar_tier_batch_t** out_batch) {
  for (uint32_t i = 0; i < count; ++i) ops[i].result = Execute(Self(self), ops[i]);
  *out_batch = reinterpret_cast<mstar_tier_batch_t*>(new mstar_tier_batch_done);
  return nullptr;
}

mstar_status_t* Poll(void*, mstar_tier_batch_t*, uint32_t* out_done) {
  *out_done = 1;
  return nullptr;
}

mstar_status_t* Wait(void*, mstar_tier_batch_t*, uint64_t) {
  return nullptr;
}

void Release(void*, mstar_tier_batch_t* batch) {
  delete reinterpret_cast<mstar_tier_batch_done*>(batch);
}

const mstar_tier_vtable_t* Table() {
  static const mstar_tier_vtable_t table = [] {
    mstar_tier_vtable_t t{};
    t.struct_size = sizeof(t);
    t.struct_version = MSTAR_ABI_MINOR;
    t.create = nullptr;  // the suite makes its one instance itself
    t.destroy = nullptr;
    t.info = &Info;
    t.submit = &Submit;
    t.poll = &Poll;
    t.wait = &Wait;
    t.release = &Release;
    return t;
  }();
  return &table;
}

}  // namespace

mstar_tier_handle_t* SuiteMemoryTier() {
  static MemoryTier* tier = new MemoryTier;  // never freed: lives until the process ends
  static mstar_tier_handle_t* handle = [] {
    auto* h = new mstar_tier_handle_t;
    h->name = "conformance-memory";
    h->vtable = Table();
    h->self = tier;
    return h;
  }();
  return handle;
}

}  // namespace mstar::conformance
