// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// BytesWriter: appends to a byte buffer the host provided (published state, resident deltas,
// encoded outputs).
#pragma once

#include <string_view>
#include <type_traits>

#include "mstar/sdk/error.hpp"

namespace mstar::sdk {

class BytesWriter {
 public:
  BytesWriter(const mstar_host_api_t* host, mstar_bytes_t* bytes) : host_(host), bytes_(bytes) {}

  void append(const void* data, uint64_t size) {
    Check(host_, host_->bytes_append(bytes_, data, size));
  }
  void append(std::string_view text) { append(text.data(), text.size()); }
  template <typename T>
  void append_pod(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "append_pod takes plain values");
    append(&value, sizeof(T));
  }
  uint64_t size() const { return host_->bytes_size(bytes_); }

 private:
  const mstar_host_api_t* host_;
  mstar_bytes_t* bytes_;
};

}  // namespace mstar::sdk
