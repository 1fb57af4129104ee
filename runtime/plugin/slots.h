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

}  // namespace mstar

// Whether `table->member` (added in ABI minor since_minor) may be called.
#define MSTAR_HAS_SLOT(table, member, since_minor)                                          \
  (::mstar::TableHasSlot(                                                                   \
       (table), offsetof(std::remove_cv_t<std::remove_pointer_t<decltype(table)>>, member), \
       (since_minor)) &&                                                                    \
   (table)->member != nullptr)
