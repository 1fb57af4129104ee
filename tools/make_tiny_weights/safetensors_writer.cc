// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "safetensors_writer.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace mstar::tools {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void SafetensorsWriter::Add(const std::string& name, std::vector<int64_t> shape,
                            std::vector<float> values) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count != static_cast<int64_t>(values.size()))
    throw std::invalid_argument("tensor '" + name + "': shape holds " + std::to_string(count) +
                                " elements but " + std::to_string(values.size()) + " were given");
  for (const Entry& e : entries_) {
    if (e.name == name) throw std::invalid_argument("tensor '" + name + "' added twice");
  }
  entries_.push_back({name, std::move(shape), std::move(values)});
}

std::vector<uint8_t> SafetensorsWriter::Serialize() const {
  // Offsets follow the order of addition.
  std::map<std::string, std::pair<const Entry*, uint64_t>> by_name;
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    by_name[e.name] = {&e, offset};
    offset += e.values.size() * sizeof(float);
  }
  std::string header = "{";
  if (!metadata_.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata_) {
      if (!first) header += ",";
      first = false;
      header += JsonString(key) + ":" + JsonString(value);
    }
    header += "}";
  }
  for (const auto& [name, entry] : by_name) {
    if (header.size() > 1) header += ",";
    header += JsonString(name) + ":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < entry.first->shape.size(); ++i) {
      if (i > 0) header += ",";
      header += std::to_string(entry.first->shape[i]);
    }
    uint64_t begin = entry.second;
    uint64_t end = begin + entry.first->values.size() * sizeof(float);
    header += "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
  }
  header += "}";
  while ((8 + header.size()) % 8 != 0) header += ' ';

  std::vector<uint8_t> out(8 + header.size() + offset);
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(length >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  uint8_t* data = out.data() + 8 + header.size();
  for (const Entry& e : entries_) {
    // Little-endian float32: byte-wise so the file is the same on any host.
    for (float v : e.values) {
      uint32_t bits = 0;
      std::memcpy(&bits, &v, sizeof(bits));
      for (int i = 0; i < 4; ++i) *data++ = static_cast<uint8_t>(bits >> (8 * i));
    }
  }
  return out;
}

}  // namespace mstar::tools
