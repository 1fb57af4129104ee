// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// BytesWriter: appends to a byte buffer the host provided (published state, resident deltas,
// encoded outputs). HexString: bytes as lowercase hex, for names and messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "mstar/sdk/error.hpp"

namespace mstar::sdk {

// size bytes at data as lowercase hex, two digits each.
inline std::string HexString(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

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
