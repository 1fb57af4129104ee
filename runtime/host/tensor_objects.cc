// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host/tensor_objects.h"

#include <algorithm>
#include <cstring>

#include "core/fault_injection.h"
#include "device/device.h"
#include "host/memory_ledger.h"
#include "host/recycler.h"

namespace mstar {
namespace {

constexpr int32_t kMaxDims = 64;

// "{2, 3}", for messages.
std::string ShapeText(const int64_t* dims, int32_t ndim) {
  std::string text = "{";
  for (int32_t i = 0; i < ndim; ++i) text += (i > 0 ? ", " : "") + std::to_string(dims[i]);
  return text + "}";
}

void DeleteHostTensor(mstar_tensor_t* tensor) {
  auto* host = static_cast<HostTensor*>(tensor->manager_ctx);
  host->storage->Unref();
  host->storage = nullptr;
  if (host->spilled_dims.capacity() > 2 * static_cast<size_t>(HostTensor::kInlineDims) * 4) {
    std::vector<int64_t>().swap(host->spilled_dims);  // do not keep rare large shapes around
  }
  host->view.deleter = nullptr;  // a stale pointer is no host tensor any more
  host->view.manager_ctx = nullptr;
  Recycler<HostTensor>::Put(host);
}

// Data from the ledger, returned when the last reference goes. Recycled.
class LedgerStorage final : public TensorStorage {
 public:
  // Takes data (freed when the last reference goes); on std::bad_alloc data is still the
  // caller's.
  static LedgerStorage* Make(void* data) {
    MaybeFailHostObject();
    LedgerStorage* storage = Recycler<LedgerStorage>::Get();
    storage->ResetRefs();
    storage->data_ = data;
    return storage;
  }

 protected:
  void Dispose() override {
    if (data_ != nullptr) (void)MemoryLedger::Global().Free(data_);
    data_ = nullptr;
    Recycler<LedgerStorage>::Put(this);
  }

 private:
  void* data_ = nullptr;
};

// A plugin's tensor, whose deleter runs when the last reference goes.
class ForeignStorage final : public TensorStorage {
 public:
  explicit ForeignStorage(mstar_tensor_t* tensor) : tensor_(tensor) {}
  ~ForeignStorage() override {
    if (tensor_->deleter != nullptr) tensor_->deleter(tensor_);
  }

 private:
  mstar_tensor_t* tensor_;
};

Status NoRecordMemory(const std::bad_alloc& error) {
  return ResourceExhausted(std::string("no memory for a tensor's record: ") + error.what());
}

// storage: one reference, which the new tensor takes, or which is dropped when no tensor can be
// made (out of memory: the status says so).
Result<HostTensor*> NewHostTensor(const DLTensor& dl, uint64_t flags, TensorStorage* storage) {
  HostTensor* host = nullptr;
  int64_t* dims = nullptr;
  try {
    MaybeFailHostObject();
    host = Recycler<HostTensor>::Get();
    dims = host->inline_dims;
    if (dl.ndim > HostTensor::kInlineDims) {
      host->spilled_dims.resize(2 * static_cast<size_t>(dl.ndim));
      dims = host->spilled_dims.data();
    }
  } catch (const std::bad_alloc& error) {
    if (host != nullptr) Recycler<HostTensor>::Put(host);
    storage->Unref();
    return NoRecordMemory(error);
  }
  std::copy(dl.shape, dl.shape + dl.ndim, dims);
  std::copy(dl.strides, dl.strides + dl.ndim, dims + dl.ndim);
  host->storage = storage;
  host->in_map = false;
  mstar_tensor_t& view = host->view;
  std::memset(&view, 0, sizeof(view));
  view.struct_size = sizeof(mstar_tensor_t);
  view.struct_version = MSTAR_TENSOR_VERSION;
  view.dlpack_major = MSTAR_DLPACK_MAJOR;
  view.dlpack_minor = MSTAR_DLPACK_MINOR;
  view.flags = flags;
  view.dl = dl;
  view.dl.shape = dims;
  view.dl.strides = dims + dl.ndim;
  view.manager_ctx = host;
  view.deleter = &DeleteHostTensor;
  return host;
}

}  // namespace

bool IsHostTensorOrView(const mstar_tensor_t* tensor) {
  return tensor != nullptr && tensor->deleter == &DeleteHostTensor;
}

bool IsHostTensor(const mstar_tensor_t* tensor) {
  return IsHostTensorOrView(tensor) &&
         &static_cast<const HostTensor*>(tensor->manager_ctx)->view == tensor;
}

namespace {

// Whether a host tensor's shape and strides are still its record's own: its holder may have
// pointed them elsewhere, or changed ndim past what the record holds. REQUIRES: IsHostTensor.
bool HoldsItsDims(const mstar_tensor_t& tensor) {
  const auto& host = *static_cast<const HostTensor*>(tensor.manager_ctx);
  const int64_t* dims =
      tensor.dl.ndim > HostTensor::kInlineDims ? host.spilled_dims.data() : host.inline_dims;
  return tensor.dl.shape == dims && tensor.dl.strides == dims + tensor.dl.ndim &&
         (tensor.dl.ndim <= HostTensor::kInlineDims ||
          host.spilled_dims.size() >= 2 * static_cast<size_t>(tensor.dl.ndim));
}

}  // namespace

std::string_view ReleaseRefusal(const mstar_tensor_t* tensor) {
  if (!IsHostTensorOrView(tensor)) return "";
  if (!IsHostTensor(tensor)) return "the tensor is a view the host lent, not the caller's";
  if (static_cast<const HostTensor*>(tensor->manager_ctx)->in_map)
    return "a tensor map holds the tensor (tensor_map_get lends it; the map releases it)";
  return "";
}

std::string DTypeName(const DLDataType& dtype) {
  std::string name;
  switch (dtype.code) {
    case kDLInt: name = "int"; break;
    case kDLUInt: name = "uint"; break;
    case kDLFloat: name = "float"; break;
    case kDLBfloat: name = "bfloat"; break;
    case kDLComplex: name = "complex"; break;
    default: name.append("code ").append(std::to_string(dtype.code)).append(" bits "); break;
  }
  name += std::to_string(dtype.bits);
  if (dtype.lanes != 1) name.append("x").append(std::to_string(dtype.lanes));
  return name;
}

int64_t TensorNumElements(const DLTensor& tensor) {
  int64_t n = 1;
  for (int32_t i = 0; i < tensor.ndim; ++i) n *= tensor.shape[i];
  return n;
}

uint64_t TensorNumBytes(const DLTensor& tensor) {
  return static_cast<uint64_t>(TensorNumElements(tensor)) * ElementBytes(tensor.dtype);
}

bool CheckedTensorSize(const int64_t* shape, int32_t ndim, DLDataType dtype, int64_t* out_numel,
                       uint64_t* out_bytes) {
  bool empty = false;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return false;
    empty |= shape[i] == 0;
  }
  int64_t numel = empty ? 0 : 1;
  for (int32_t i = 0; i < ndim && !empty; ++i) {
    if (__builtin_mul_overflow(numel, shape[i], &numel)) return false;
  }
  int64_t bytes = 0;  // int64_t: a byte size must also fit a signed offset
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(ElementBytes(dtype)), &bytes))
    return false;
  if (out_numel != nullptr) *out_numel = numel;
  if (out_bytes != nullptr) *out_bytes = static_cast<uint64_t>(bytes);
  return true;
}

bool TensorIsCompact(const DLTensor& tensor) {
  if (tensor.strides == nullptr) return true;
  for (int32_t d = 0; d < tensor.ndim; ++d) {
    if (tensor.shape[d] == 0) return true;  // no elements: nothing is laid out
  }
  int64_t expected = 1;
  for (int32_t d = tensor.ndim; d-- > 0;) {
    if (tensor.shape[d] != 1 && tensor.strides[d] != expected) return false;
    expected *= tensor.shape[d];  // at most the element count, which was checked
  }
  return true;
}

// Whether the tensor follows the rules, without building a message (the common case).
bool TensorIsValid(const mstar_tensor_t* tensor) {
  if (tensor == nullptr || tensor->struct_size < sizeof(mstar_tensor_t) ||
      tensor->struct_version < 1 || tensor->dlpack_major > 1) {
    return false;
  }
  const DLTensor& dl = tensor->dl;
  if (dl.ndim < 0 || dl.ndim > kMaxDims) return false;
  if (dl.ndim > 0 && (dl.shape == nullptr || dl.strides == nullptr)) return false;
  if (dl.dtype.bits == 0 || dl.dtype.lanes == 0) return false;
  int64_t numel = 0;
  if (!CheckedTensorSize(dl.shape, dl.ndim, dl.dtype, &numel, nullptr)) return false;
  if (dl.data == nullptr && numel != 0) return false;
  return TensorIsCompact(dl);
}

Status ValidateTensor(const mstar_tensor_t* tensor, std::string_view what) {
  if (TensorIsValid(tensor)) return Status::Ok();
  std::string name(what);
  if (tensor == nullptr) return InvalidArgument(name + " is NULL");
  if (tensor->struct_size < sizeof(mstar_tensor_t)) {
    return InvalidArgument(name + ": struct_size " + std::to_string(tensor->struct_size) +
                           " is smaller than mstar_tensor_t (" +
                           std::to_string(sizeof(mstar_tensor_t)) + ")");
  }
  if (tensor->struct_version < 1) return InvalidArgument(name + ": struct_version is 0");
  if (tensor->dlpack_major > 1) {
    return Incompatible(name + ": DLPack " + std::to_string(tensor->dlpack_major) + "." +
                        std::to_string(tensor->dlpack_minor) + " tensors cannot be read");
  }
  const DLTensor& dl = tensor->dl;
  if (dl.ndim < 0 || dl.ndim > kMaxDims) {
    return InvalidArgument(name + ": ndim " + std::to_string(dl.ndim) + " is out of range");
  }
  if (dl.ndim > 0 && (dl.shape == nullptr || dl.strides == nullptr)) {
    return InvalidArgument(name + ": shape and strides must both be set (mstar/tensor.h: strides " +
                           "are always filled)");
  }
  for (int32_t i = 0; i < dl.ndim; ++i) {
    if (dl.shape[i] < 0) {
      return InvalidArgument(name + ": dimension " + std::to_string(i) + " has negative size " +
                             std::to_string(dl.shape[i]));
    }
  }
  if (dl.dtype.bits == 0 || dl.dtype.lanes == 0) {
    return InvalidArgument(name + ": dtype has zero bits or lanes");
  }
  int64_t numel = 0;
  if (!CheckedTensorSize(dl.shape, dl.ndim, dl.dtype, &numel, nullptr)) {
    return InvalidArgument(name + ": shape " + ShapeText(dl.shape, dl.ndim) +
                           " has more elements or bytes than 64 bits can count");
  }
  if (dl.data == nullptr && numel != 0) {
    return InvalidArgument(name + ": data is NULL but the tensor has elements");
  }
  return InvalidArgument(name + ": strides " + ShapeText(dl.strides, dl.ndim) +
                         " are not the contiguous row-major strides of shape " +
                         ShapeText(dl.shape, dl.ndim) +
                         "; the host reads and writes tensors as plain bytes, so a tensor must be "
                         "contiguous (LibTorch: call .contiguous() first)");
}

Result<mstar_tensor_t*> AllocateTensor(const mstar_host_context* owner, DLDevice device,
                                       DLDataType dtype, const int64_t* shape, int32_t ndim) {
  if (ndim < 0 || ndim > kMaxDims) return InvalidArgument("too many dimensions");
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return InvalidArgument("negative dimension in tensor_alloc");
  }
  // A dtype of no bits or no lanes has no element size: its elements would have no storage.
  if (dtype.bits == 0 || dtype.lanes == 0) {
    return InvalidArgument("tensor_alloc: dtype of " + std::to_string(dtype.bits) + " bits and " +
                           std::to_string(dtype.lanes) + " lanes has no element size");
  }
  uint64_t bytes = 0;
  if (!CheckedTensorSize(shape, ndim, dtype, nullptr, &bytes)) {
    return InvalidArgument("tensor_alloc: shape " + ShapeText(shape, ndim) +
                           " has more elements or bytes than 64 bits can count");
  }
  int64_t strides[kMaxDims];
  int64_t running = 1;
  for (int32_t i = ndim; i-- > 0;) {
    strides[i] = running;
    // Within the checked element count, except past a zero dimension: an empty tensor's strides
    // are never read, so a wrapped one does no harm.
    (void)__builtin_mul_overflow(running, shape[i], &running);
  }
  DLTensor dl{};
  dl.device = device;
  dl.ndim = ndim;
  dl.dtype = dtype;
  dl.shape = const_cast<int64_t*>(shape);
  dl.strides = strides;
  void* data = nullptr;
  if (bytes > 0) {
    Result<void*> allocated = MemoryLedger::Global().Allocate(owner, device, bytes, 256, false,
                                                              /*tensor_storage=*/true);
    if (!allocated.ok()) return allocated.status();
    data = allocated.value();
  } else if (Result<DeviceBackend*> backend = BackendFor(device); !backend.ok()) {
    return backend.status();  // an empty tensor too is on a device this build has
  }
  dl.data = data;
  LedgerStorage* storage = nullptr;
  try {
    storage = LedgerStorage::Make(data);
  } catch (const std::bad_alloc& error) {
    if (data != nullptr) (void)MemoryLedger::Global().Free(data);
    return NoRecordMemory(error);
  }
  Result<HostTensor*> host = NewHostTensor(dl, 0, storage);
  if (!host.ok()) return host.status();
  return &host.value()->view;
}

Result<mstar_tensor_t*> ShareTensor(const mstar_tensor_t* tensor) {
  if (!IsHostTensorOrView(tensor)) {
    return InvalidArgument(
        "tensor_share takes tensors obtained from the host (maps, "
        "tensor_alloc); this tensor belongs to its producer");
  }
  const auto* source = static_cast<const HostTensor*>(tensor->manager_ctx);
  source->storage->Ref();
  Result<HostTensor*> copy = NewHostTensor(tensor->dl, tensor->flags, source->storage);
  if (!copy.ok()) return copy.status();
  return &copy.value()->view;
}

Result<mstar_tensor_t*> AdoptTensor(mstar_tensor_t* tensor, std::string_view what) {
  // Host tensors are checked too: their fields are writable by whoever holds them.
  auto delete_invalid = [tensor] {
    if (tensor != nullptr && tensor->struct_size >= sizeof(mstar_tensor_t) &&
        tensor->deleter != nullptr) {
      tensor->deleter(tensor);
    }
  };
  Status valid;
  try {
    valid = ValidateTensor(tensor, what);
  } catch (const std::bad_alloc& error) {  // the message's memory: transferred all the same
    delete_invalid();
    return NoRecordMemory(error);
  }
  if (valid.ok() && IsHostTensor(tensor)) return tensor;
  if (!valid.ok()) {
    delete_invalid();
    return valid;
  }
  ForeignStorage* storage = nullptr;
  try {
    MaybeFailHostObject();
    storage = new ForeignStorage(tensor);
  } catch (const std::bad_alloc& error) {
    ReleaseTensor(tensor);  // transferred on every failure
    return NoRecordMemory(error);
  }
  Result<HostTensor*> host = NewHostTensor(tensor->dl, tensor->flags, storage);
  if (!host.ok()) return host.status();  // dropping storage ran the tensor's deleter
  return &host.value()->view;
}

void ReleaseTensor(mstar_tensor_t* tensor) {
  if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
}

}  // namespace mstar

mstar_tensor_map::~mstar_tensor_map() {
  Clear();
}

mstar_tensor_map::Entry* mstar_tensor_map::Find(std::string_view name) {
  for (size_t i = 0; i < live_; ++i) {
    if (slots_[i].name == name) return &slots_[i];
  }
  return nullptr;
}

const mstar_tensor_map::Entry* mstar_tensor_map::Find(std::string_view name) const {
  for (size_t i = 0; i < live_; ++i) {
    if (slots_[i].name == name) return &slots_[i];
  }
  return nullptr;
}

mstar_tensor_map::Entry& mstar_tensor_map::EntryFor(std::string_view name) {
  if (Entry* entry = Find(name)) return *entry;
  if (live_ == slots_.size()) {
    slots_.push_back(Entry{std::string(name), {}});
    return slots_[live_++];
  }
  // An emptied entry that had this name (the common case for a map reused step after step) is
  // swapped into place; else the first emptied one is renamed.
  for (size_t i = live_; i < slots_.size(); ++i) {
    if (slots_[i].name != name) continue;
    if (i != live_) std::swap(slots_[i], slots_[live_]);
    return slots_[live_++];
  }
  slots_[live_].name.assign(name.data(), name.size());
  return slots_[live_++];
}

mstar::Status mstar_tensor_map::Append(std::string_view name, mstar_tensor_t* tensor) {
  if (borrowing_) {
    // Transferred, as on every failure, unless it is not the caller's to give (R7).
    if (mstar::ReleaseRefusal(tensor).empty()) mstar::ReleaseTensor(tensor);
    return mstar::Internal("tensor map: appending to a map that borrows its tensors");
  }
  // Not the caller's to give: appending it would leave two owners (it is not released here).
  if (const std::string_view refusal = mstar::ReleaseRefusal(tensor); !refusal.empty()) {
    return mstar::InvalidArgument(std::string("tensor '")
                                      .append(name)
                                      .append("': ")
                                      .append(refusal)
                                      .append("; append a tensor_share of it instead"));
  }
  mstar_tensor_t* adopted = tensor;
  if (!mstar::IsHostTensor(tensor) || !mstar::TensorIsValid(tensor)) {
    std::string what;
    try {
      what = "tensor '" + std::string(name) + "'";
    } catch (const std::bad_alloc&) {
      mstar::ReleaseTensor(tensor);  // transferred on every failure
      throw;
    }
    mstar::Result<mstar_tensor_t*> made = mstar::AdoptTensor(tensor, what);
    if (!made.ok()) return made.status();
    adopted = made.value();
  } else if (!mstar::HoldsItsDims(*tensor)) {
    // Its holder pointed its shape or strides elsewhere (a reshape in place): the map's record
    // gets its own copy of them, so that it never reads the holder's memory.
    mstar::Result<mstar_tensor_t*> copy = mstar::ShareTensor(tensor);
    mstar::ReleaseTensor(tensor);
    if (!copy.ok()) return copy.status();
    adopted = copy.value();
  }
  try {
    mstar::MaybeFailHostObject();
    EntryFor(name).tensors.push_back(adopted);
  } catch (const std::bad_alloc& error) {
    mstar::ReleaseTensor(adopted);  // transferred on every failure
    if (const Entry* entry = Find(name); entry != nullptr && entry->tensors.empty()) Remove(name);
    return mstar::ResourceExhausted(std::string("tensor '")
                                        .append(name)
                                        .append("': no memory for the map's entry: ")
                                        .append(error.what()));
  }
  static_cast<mstar::HostTensor*>(adopted->manager_ctx)->in_map = true;
  return mstar::Status::Ok();
}

void mstar_tensor_map::AppendHost(std::string_view name, mstar_tensor_t* tensor) {
  MSTAR_CHECK(!borrowing_ && mstar::IsHostTensor(tensor));
  EntryFor(name).tensors.push_back(tensor);
  static_cast<mstar::HostTensor*>(tensor->manager_ctx)->in_map = true;
}

void mstar_tensor_map::AppendBorrowed(std::string_view name, const mstar_tensor_t* tensor) {
  MSTAR_CHECK(borrowing_ || live_ == 0);
  borrowing_ = true;
  EntryFor(name).tensors.push_back(const_cast<mstar_tensor_t*>(tensor));
}

void mstar_tensor_map::Release(Entry& entry) {
  if (!borrowing_) {
    for (mstar_tensor_t* tensor : entry.tensors) mstar::ReleaseTensor(tensor);
  }
  entry.tensors.clear();
}

uint32_t mstar_tensor_map::Remove(std::string_view name) {
  Entry* entry = Find(name);
  if (entry == nullptr) return 0;
  auto count = static_cast<uint32_t>(entry->tensors.size());
  Release(*entry);
  // The emptied entry moves behind the live ones, which keep their order.
  auto at = slots_.begin() + (entry - slots_.data());
  std::rotate(at, at + 1, slots_.begin() + static_cast<std::ptrdiff_t>(live_));
  --live_;
  return count;
}

void mstar_tensor_map::Clear() {
  for (size_t i = 0; i < live_; ++i) Release(slots_[i]);
  live_ = 0;
  if (slots_.size() > kSpareEntries) slots_.resize(kSpareEntries);
  borrowing_ = false;
}

namespace mstar {

mstar_tensor_map* NewMap() {
  return Recycler<mstar_tensor_map>::Get();
}

void DropMap(mstar_tensor_map* map) {
  if (map == nullptr) return;
  map->Clear();
  map->set_plugin_owned(false);
  Recycler<mstar_tensor_map>::Put(map);
}

bool AllOnHost(const mstar_tensor_map& map) {
  for (const mstar_tensor_map::Entry& entry : map.entries()) {
    for (const mstar_tensor_t* tensor : entry.tensors) {
      if (!IsHostDevice(tensor->dl.device)) return false;
    }
  }
  return true;
}

Status AppendHostCopies(const std::vector<std::string>& names, const mstar_tensor_map& from,
                        mstar_tensor_map* to) {
  // Map tensors are compact (they passed ValidateTensor, or the host made them), so a device
  // tensor copies as numel * element-size bytes from its first element.
  for (const std::string& name : names) {
    const mstar_tensor_map::Entry* entry = from.Find(name);
    if (entry == nullptr) continue;
    for (const mstar_tensor_t* tensor : entry->tensors) {
      if (IsHostDevice(tensor->dl.device)) {
        MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * shared, ShareTensor(tensor));
        MSTAR_RETURN_IF_ERROR(to->Append(name, shared));
        continue;
      }
      std::vector<int64_t> shape(tensor->dl.shape, tensor->dl.shape + tensor->dl.ndim);
      MSTAR_ASSIGN_OR_RETURN(DeviceBackend * backend, BackendFor(tensor->dl.device));
      MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * copy,
                             AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, tensor->dl.dtype, shape));
      Status copied = backend->Copy(copy->dl.data, copy->dl.device, TensorBytes(tensor->dl),
                                    tensor->dl.device, TensorNumBytes(tensor->dl), nullptr);
      if (!copied.ok()) {
        ReleaseTensor(copy);
        return copied;
      }
      MSTAR_RETURN_IF_ERROR(to->Append(name, copy));
    }
  }
  return Status::Ok();
}

}  // namespace mstar
