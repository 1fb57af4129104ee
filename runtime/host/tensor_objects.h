// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Host-managed tensors and tensor maps.
//
// Every tensor that enters a host map is owned by the host from then on: a tensor the host made
// (tensor_alloc, tensor_share) is kept as is; a plugin's own tensor is checked against the tensor
// rules (mstar/tensor.h) and wrapped, so that its deleter runs exactly once, when the last host
// reference goes. Host-managed tensors can be shared (tensor_share) without copying.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "mstar/tensor.h"

struct mstar_host_context;

namespace mstar {

// What keeps a host tensor's data alive; shared by every reference to it (an intrusive count:
// one reference per HostTensor). Created with one reference; the last Unref disposes of it.
class TensorStorage {
 public:
  virtual ~TensorStorage() = default;
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) Dispose();
  }

 protected:
  // Frees the data and the object (implementations may recycle the object instead).
  virtual void Dispose() { delete this; }
  void ResetRefs() { refs_.store(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> refs_{1};
};

// The manager_ctx of every host-managed tensor. Shapes of up to kInlineDims dimensions live
// inside the object (no allocation); larger ones spill to the heap. Objects are recycled
// (host/recycler.h).
struct HostTensor {
  static constexpr int32_t kInlineDims = 6;
  mstar_tensor_t view;
  int64_t inline_dims[2 * kInlineDims];
  std::vector<int64_t> spilled_dims;
  TensorStorage* storage = nullptr;  // one reference
  // Held by a tensor map (which releases it): it may not enter another map, nor be released by
  // anyone else. Set by the maps' appends; a map releasing it recycles the object.
  bool in_map = false;
};

// Whether tensor is a host-managed tensor object (not a view the host copied of one).
bool IsHostTensor(const mstar_tensor_t* tensor);
// Whether tensor is a host tensor or a copy of one's fields (a row view the host lends a hook,
// whose deleter and manager_ctx are the tensor's): shareable, but never the caller's to release.
bool IsHostTensorOrView(const mstar_tensor_t* tensor);
// Why a plugin may not release tensor through tensor_release (a map holds it, or it is a view
// the host lent), or "" when it may.
std::string_view ReleaseRefusal(const mstar_tensor_t* tensor);

// Whether tensor follows the rules of mstar/tensor.h (ValidateTensor without the message).
bool TensorIsValid(const mstar_tensor_t* tensor);
// Checks a tensor a plugin produced against the rules of mstar/tensor.h, and that the host may
// treat it as numel * element-size plain bytes: its element count and byte size fit in int64
// (checked, so a shape cannot wrap to "empty"), and it is compact (TensorIsCompact; the host
// copies map tensors and communicator buffers as plain bytes, ignoring strides). Every tensor
// entering a host map passes this check, so code reading map tensors may rely on it. `what`
// names the tensor in the message ("output 'logits'").
Status ValidateTensor(const mstar_tensor_t* tensor, std::string_view what);

// The element count and byte size of a tensor of shape[0..ndim) and dtype (either out may be
// null); false when a dimension is negative or either overflows int64.
bool CheckedTensorSize(const int64_t* shape, int32_t ndim, DLDataType dtype, int64_t* out_numel,
                       uint64_t* out_bytes);
// Whether tensor is laid out contiguous and row-major: strides NULL, or equal to the compact
// strides, where a dimension of size 1 may have any stride (it is never stepped over); an empty
// tensor always is. REQUIRES: the shape's size checked (CheckedTensorSize).
bool TensorIsCompact(const DLTensor& tensor);

// A new contiguous tensor in ledger memory, owned by the caller.
Result<mstar_tensor_t*> AllocateTensor(const mstar_host_context* owner, DLDevice device,
                                       DLDataType dtype, const int64_t* shape, int32_t ndim);
inline Result<mstar_tensor_t*> AllocateTensor(const mstar_host_context* owner, DLDevice device,
                                              DLDataType dtype, const std::vector<int64_t>& shape) {
  return AllocateTensor(owner, device, dtype, shape.data(), static_cast<int32_t>(shape.size()));
}
// A new reference to a host-managed tensor's storage.
Result<mstar_tensor_t*> ShareTensor(const mstar_tensor_t* tensor);
// Takes ownership of any valid tensor and returns a host-managed one. On failure the tensor has
// been deleted.
Result<mstar_tensor_t*> AdoptTensor(mstar_tensor_t* tensor, std::string_view what);
// Calls the tensor's deleter (null is ignored).
void ReleaseTensor(mstar_tensor_t* tensor);

// Whether two dtypes are the same (code, bits and lanes).
inline bool SameDType(const DLDataType& a, const DLDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
// "float32", "int64", "uint8x4" (lanes), "bfloat16", "code 9 bits 16": the dtype as errors
// name it.
std::string DTypeName(const DLDataType& dtype);
// Bytes per element of dtype (bits times lanes, rounded up to whole bytes).
inline uint64_t ElementBytes(const DLDataType& dtype) {
  return (static_cast<uint64_t>(dtype.bits) * dtype.lanes + 7) / 8;
}
// Bytes the tensor's elements span (numel * element size), ignoring strides.
uint64_t TensorNumBytes(const DLTensor& tensor);
// The address of the tensor's first element (data + byte_offset).
inline uint8_t* TensorBytes(const DLTensor& tensor) {
  return static_cast<uint8_t*>(tensor.data) + tensor.byte_offset;
}
int64_t TensorNumElements(const DLTensor& tensor);

}  // namespace mstar

// The ABI's tensor map: names in first-insertion order, each with a list of host-managed tensors.
// Clear and Remove keep emptied entries (their name and list buffers) behind the live ones, and an
// Append of a name seen before takes its old entry back, so a map reused across steps with the
// same names neither allocates nor copies a name.
//
// A map may instead borrow all its tensors (AppendBorrowed): it then only points at tensors that
// the caller keeps alive for as long as the map is read, and never releases them. Only the host
// makes such maps (a read-only view for a plugin hook); Clear makes a map owning again.
struct mstar_tensor_map {
  struct Entry {
    std::string name;
    std::vector<mstar_tensor_t*> tensors;  // owned
  };

  mstar_tensor_map() = default;
  mstar_tensor_map(const mstar_tensor_map&) = delete;
  mstar_tensor_map& operator=(const mstar_tensor_map&) = delete;
  ~mstar_tensor_map();

  // The live entries in first-insertion order; valid until the map changes.
  std::span<Entry> entries() { return {slots_.data(), live_}; }
  std::span<const Entry> entries() const { return {slots_.data(), live_}; }
  Entry* Find(std::string_view name);
  const Entry* Find(std::string_view name) const;
  // Adopts tensor (see AdoptTensor) and appends it under name.
  mstar::Status Append(std::string_view name, mstar_tensor_t* tensor);
  // Appends a host tensor the runtime itself holds (made by AllocateTensor or ShareTensor and
  // never handed to a plugin to write), taking it without the checks Append makes. The map must
  // own its tensors.
  void AppendHost(std::string_view name, mstar_tensor_t* tensor);
  // Borrows tensor under name (see above). The map must be empty or borrowing already.
  void AppendBorrowed(std::string_view name, const mstar_tensor_t* tensor);
  bool borrowing() const { return borrowing_; }
  // Made by a plugin's tensor_map_new and not yet released: the only maps tensor_map_release
  // takes (the others are the host's, lent to hooks). DropMap clears it.
  bool plugin_owned() const { return plugin_owned_; }
  void set_plugin_owned(bool owned) { plugin_owned_ = owned; }
  // Removes name; returns the number of tensors released.
  uint32_t Remove(std::string_view name);
  void Clear();

 private:
  static constexpr size_t kSpareEntries = 16;  // entries a Clear keeps (live ones emptied)
  void Release(Entry& entry);                  // releases its tensors (unless borrowed)
  Entry& EntryFor(std::string_view name);      // found or appended
  std::vector<Entry> slots_;  // [0, live_): the entries; then emptied ones for reuse
  size_t live_ = 0;
  bool borrowing_ = false;
  bool plugin_owned_ = false;
};

namespace mstar {

// Tensor maps are recycled: NewMap hands out an empty map (possibly a used one, cleared);
// DropMap clears a map (releasing its tensors) and takes it back. Null is ignored.
mstar_tensor_map* NewMap();
void DropMap(mstar_tensor_map* map);

struct TensorMapDeleter {
  void operator()(mstar_tensor_map* map) const { DropMap(map); }
};
using TensorMapPtr = std::unique_ptr<mstar_tensor_map, TensorMapDeleter>;

inline TensorMapPtr NewTensorMap() {
  return TensorMapPtr(NewMap());
}

// Appends to `to` a host-memory view of the tensors under names in `from` (a name `from` lacks is
// skipped): host tensors shared, device tensors copied (the copy has landed on return). On failure
// `to` may hold the tensors appended before it.
Status AppendHostCopies(const std::vector<std::string>& names, const mstar_tensor_map& from,
                        mstar_tensor_map* to);

// Whether every tensor of map is in host memory.
bool AllOnHost(const mstar_tensor_map& map);

}  // namespace mstar
