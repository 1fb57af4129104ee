// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Tensors, tensor maps and byte buffers for plugins.
#include <new>
#include <string>
#include <vector>

#include "core/fault_injection.h"
#include "core/logging.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/services.h"
#include "host/tensor_objects.h"

namespace mstar {
namespace {

mstar_status_t* TensorAlloc(mstar_host_context_t* context, DLDevice device, DLDataType dtype,
                            int32_t ndim, const int64_t* shape, mstar_tensor_t** out_tensor) {
  if (ndim < 0 || (ndim > 0 && shape == nullptr)) {
    return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, "tensor_alloc: bad ndim or NULL shape");
  }
  return ServiceBarrier(
      "tensor_alloc", [] { return std::string("tensor_alloc"); },
      [&] {
        Result<mstar_tensor_t*> tensor = AllocateTensor(context, device, dtype, shape, ndim);
        if (!tensor.ok()) return MakeAbiStatus(tensor.status());
        *out_tensor = tensor.value();
        return static_cast<mstar_status_t*>(nullptr);
      });
}

mstar_status_t* TensorShare(const mstar_tensor_t* tensor, mstar_tensor_t** out_tensor) {
  return ServiceBarrier(
      "tensor_share", [] { return std::string("tensor_share"); },
      [&] {
        // A host tensor's fields are writable by whoever holds it: its shape is read only if valid.
        if (IsHostTensorOrView(tensor)) {
          if (Status valid = ValidateTensor(tensor, "tensor_share"); !valid.ok())
            return MakeAbiStatus(valid);
        }
        Result<mstar_tensor_t*> shared = ShareTensor(tensor);
        if (!shared.ok()) return MakeAbiStatus(shared.status());
        *out_tensor = shared.value();
        return static_cast<mstar_status_t*>(nullptr);
      });
}

void TensorRelease(mstar_tensor_t* tensor) {
  if (std::string_view refusal = ReleaseRefusal(tensor); !refusal.empty()) {
    Log().error("tensor_release: {}; it is not released", refusal);
    return;
  }
  ReleaseTensor(tensor);
}

mstar_status_t* TensorMapNew(mstar_tensor_map_t** out_map) {
  try {
    MaybeFailHostObject();
    *out_map = NewMap();
    (*out_map)->set_plugin_owned(true);
  } catch (const std::bad_alloc& error) {
    return BadAllocStatus("tensor_map_new", error);
  }
  return nullptr;
}

void TensorMapRelease(mstar_tensor_map_t* map) {
  if (map == nullptr) return;
  if (!map->plugin_owned()) {
    Log().error(
        "tensor_map_release: the map was lent by the host (to a hook) or released "
        "already, not made by tensor_map_new; it is not released");
    return;
  }
  DropMap(map);
}

mstar_status_t* TensorMapAppend(mstar_tensor_map_t* map, const char* name, mstar_tensor_t* tensor) {
  if (map == nullptr || name == nullptr) {
    TensorRelease(tensor);  // the caller's to give, or refused with nothing freed (R7)
    return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, "tensor_map_append: NULL map or name");
  }
  return ServiceBarrier(
      "tensor_map_append", [] { return std::string("tensor_map_append"); },
      [&] {
        Status status = map->Append(name, tensor);
        return status.ok() ? nullptr : MakeAbiStatus(status);
      });
}

uint32_t TensorMapNumNames(const mstar_tensor_map_t* map) {
  return map == nullptr ? 0u : static_cast<uint32_t>(map->entries().size());
}

const char* TensorMapNameAt(const mstar_tensor_map_t* map, uint32_t index) {
  if (map == nullptr || index >= map->entries().size()) return nullptr;
  return map->entries()[index].name.c_str();
}

uint32_t TensorMapCount(const mstar_tensor_map_t* map, const char* name) {
  if (map == nullptr || name == nullptr) return 0;
  const mstar_tensor_map::Entry* entry = map->Find(name);
  return entry == nullptr ? 0u : static_cast<uint32_t>(entry->tensors.size());
}

const mstar_tensor_t* TensorMapGet(const mstar_tensor_map_t* map, const char* name,
                                   uint32_t index) {
  if (map == nullptr || name == nullptr) return nullptr;
  const mstar_tensor_map::Entry* entry = map->Find(name);
  if (entry == nullptr || index >= entry->tensors.size()) return nullptr;
  return entry->tensors[index];
}

uint32_t TensorMapRemove(mstar_tensor_map_t* map, const char* name) {
  if (map == nullptr || name == nullptr) return 0;
  return map->Remove(name);
}

mstar_status_t* BytesAppend(mstar_bytes_t* bytes, const void* data, uint64_t size) {
  if (size == 0) return nullptr;
  if (bytes == nullptr) return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, "bytes_append: NULL bytes");
  if (data == nullptr) return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT, "bytes_append: NULL data");
  if (size > bytes->data.max_size() - bytes->data.size()) {  // nor may data + size wrap
    return NewAbiStatus(MSTAR_ERR_RESOURCE_EXHAUSTED,
                        "bytes_append: more bytes than any buffer holds");
  }
  if (uint64_t ordinal = 0; ShouldInjectFault(FaultSite::kAllocation, &ordinal)) {
    std::string message = "bytes_append: injected fault (allocation #";
    message.append(std::to_string(ordinal)).append(")");
    return NewAbiStatus(MSTAR_ERR_RESOURCE_EXHAUSTED, message.c_str());
  }
  try {
    const auto* begin = static_cast<const uint8_t*>(data);
    bytes->data.insert(bytes->data.end(), begin, begin + size);
  } catch (const std::bad_alloc&) {
    return NewAbiStatus(MSTAR_ERR_RESOURCE_EXHAUSTED, "bytes_append: out of memory");
  }
  return nullptr;
}

uint64_t BytesSize(const mstar_bytes_t* bytes) {
  return bytes == nullptr ? 0 : bytes->data.size();
}

const void* BytesData(const mstar_bytes_t* bytes) {
  return bytes == nullptr || bytes->data.empty() ? nullptr : bytes->data.data();
}

}  // namespace

void InstallTensorServices(mstar_host_api_t& table) {
  table.tensor_alloc = &TensorAlloc;
  table.tensor_share = &TensorShare;
  table.tensor_release = &TensorRelease;
  table.tensor_map_new = &TensorMapNew;
  table.tensor_map_release = &TensorMapRelease;
  table.tensor_map_append = &TensorMapAppend;
  table.tensor_map_num_names = &TensorMapNumNames;
  table.tensor_map_name_at = &TensorMapNameAt;
  table.tensor_map_count = &TensorMapCount;
  table.tensor_map_get = &TensorMapGet;
  table.tensor_map_remove = &TensorMapRemove;
  table.bytes_append = &BytesAppend;
  table.bytes_size = &BytesSize;
  table.bytes_data = &BytesData;
}

}  // namespace mstar
