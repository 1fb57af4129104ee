// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Slot gating (plugin-abi rule R4): the host reads a slot of a plugin's table only if the table
// is large enough to hold it, was filled for a minor that has it, and the slot is set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mstar {

template <typename Table>
bool TableHasSlot(const Table* table, size_t offset, uint32_t since_minor) {
  return table != nullptr && table->struct_size >= offset + sizeof(void*) &&
         table->struct_version >= since_minor;
}

// The largest struct_size taken from an element of a plugin's versioned array: a minor appends a
// few fields, so anything larger is garbage, which would set a stride reading far past the array.
inline constexpr uint32_t kMaxVersionedStructSize = 4096;

// Element i of an array of versioned structs a plugin returned. The elements are the plugin's
// struct size apart (a later minor's struct may have grown, R5): array[0].struct_size is the
// stride, which the caller checks every element carries.
template <typename Struct>
const Struct& VersionedAt(const Struct* array, uint32_t i) {
  const auto* base = reinterpret_cast<const uint8_t*>(array);
  return *reinterpret_cast<const Struct*>(base + uint64_t{i} * array[0].struct_size);
}

}  // namespace mstar

// Whether `table->member` (added in ABI minor since_minor) may be called.
#define MSTAR_HAS_SLOT(table, member, since_minor)                                          \
  (::mstar::TableHasSlot(                                                                   \
       (table), offsetof(std::remove_cv_t<std::remove_pointer_t<decltype(table)>>, member), \
       (since_minor)) &&                                                                    \
   (table)->member != nullptr)
