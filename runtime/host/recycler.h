// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Recycler<T>: a bounded free list of T objects, so that the objects the engine makes and drops
// every step (host tensors, their storage records, tensor maps) stop going to the heap in the
// steady state.
//
// Objects come back in whatever state Put left them (the caller resets what must be reset, and
// may keep capacity on purpose). Each thread keeps a small magazine; a full one hands half to a
// shared list under one lock, an empty one takes a batch from it, so the lock is taken once per
// many objects even when one thread makes them and another drops them (the engine's exec and
// finish threads). The shared list is bounded: beyond kSharedMax objects the rest are deleted.
//
// Under AddressSanitizer nothing is recycled (kRecycling is false): every Get is a new and every
// Put a delete, so a use after free is still reported.
//
// Thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <vector>

namespace mstar {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kRecycling = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kRecycling = false;
#else
inline constexpr bool kRecycling = true;
#endif
#else
inline constexpr bool kRecycling = true;
#endif

template <typename T>
class Recycler {
 public:
  static constexpr size_t kMagazine = 64;
  static constexpr size_t kSharedMax = 8192;

  // A recycled object, or a new T() when there is none (may throw std::bad_alloc).
  static T* Get() {
    if constexpr (!kRecycling) return new T();
    Magazine& m = Local();
    if (m.count == 0 && !m.dead) Refill(m);
    if (m.count == 0) return new T();
    return m.items[--m.count];
  }

  // Takes object back (not null). Never throws.
  static void Put(T* object) {
    if constexpr (!kRecycling) {
      delete object;
      return;
    }
    Magazine& m = Local();
    if (m.dead) {  // this thread is exiting: straight to the shared list
      Spill(&object, 1);
      return;
    }
    if (m.count == kMagazine) {
      Spill(m.items + kMagazine / 2, kMagazine / 2);
      m.count = kMagazine / 2;
    }
    m.items[m.count++] = object;
  }

 private:
  struct Shared {
    std::mutex mutex;
    std::vector<T*> items;
  };
  // Trivially destructible, so it stays usable while the thread's other thread-locals are torn
  // down; the Reaper empties it at thread exit and marks it dead.
  struct Magazine {
    T* items[kMagazine];
    size_t count;
    bool dead;
  };
  struct Reaper {
    Magazine* magazine;
    ~Reaper() {
      Spill(magazine->items, magazine->count);
      magazine->count = 0;
      magazine->dead = true;
    }
  };

  // Never destroyed: threads may still return objects while the process exits. Its list holds
  // kSharedMax from the start, so that Put never allocates (it runs in deleters).
  static Shared& shared() {
    static Shared* s = [] {
      auto* made = new Shared();
      made->items.reserve(kSharedMax);
      return made;
    }();
    return *s;
  }

  static Magazine& Local() {
    static thread_local Magazine magazine{{}, 0, false};
    static thread_local Reaper reaper{&magazine};
    (void)reaper;
    return magazine;
  }

  static void Refill(Magazine& m) {
    Shared& s = shared();
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t take = std::min(s.items.size(), kMagazine / 2);
    for (size_t i = 0; i < take; ++i) {
      m.items[m.count++] = s.items.back();
      s.items.pop_back();
    }
  }

  static void Spill(T* const* objects, size_t n) {
    Shared& s = shared();
    size_t kept = 0;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      while (kept < n && s.items.size() < kSharedMax) s.items.push_back(objects[kept++]);
    }
    for (size_t i = kept; i < n; ++i) delete objects[i];
  }
};

}  // namespace mstar
