// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// In a file of its own: the compiler must not see a call of the replacement operator new and
// the free in operator delete together (it would take them for a mismatched pair).
#include "failing_allocations.h"

#include <cstdlib>
#include <new>

namespace {

thread_local uint64_t allocations_until_failure = 0;
thread_local bool allocation_failed = false;

}  // namespace

namespace mstar::test {

void FailAllocation(uint64_t n) {
  allocations_until_failure = n;
  allocation_failed = false;
}

bool AllocationFailed() {
  return allocation_failed;
}

}  // namespace mstar::test

// Every unaligned form of new and delete is replaced, so each pair allocates and frees alike
// (malloc and free); a sanitizer's own forms would otherwise meet ours.
void* operator new(std::size_t size) {
  if (allocations_until_failure != 0 && --allocations_until_failure == 0) {
    allocation_failed = true;
    throw std::bad_alloc();
  }
  if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  return operator new(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete[](void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, std::size_t) noexcept {
  std::free(memory);
}
void operator delete(void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
void operator delete[](void* memory, const std::nothrow_t&) noexcept {
  std::free(memory);
}
