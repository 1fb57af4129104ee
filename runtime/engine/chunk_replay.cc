// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/chunk_replay.h"

#include <functional>
#include <string_view>

#include "engine/output_stream.h"

namespace mstar {
namespace {

// A digest of what the client sees of a chunk: its integer values and bytes, or, for a chunk of
// other data, its size.
uint64_t Digest(const OutputChunk& chunk) {
  if (chunk.values.empty()) return chunk.bytes.size();
  std::hash<std::string_view> hash;
  const uint64_t bytes =
      hash(std::string_view(reinterpret_cast<const char*>(chunk.bytes.data()), chunk.bytes.size()));
  const uint64_t values = hash(std::string_view(reinterpret_cast<const char*>(chunk.values.data()),
                                                chunk.values.size() * sizeof(int64_t)));
  return bytes ^ (values + 0x9e3779b97f4a7c15ull + (bytes << 6) + (bytes >> 2));
}

}  // namespace

ChunkReplay::Output& ChunkReplay::OutputFor(const std::string& name) {
  for (Output& output : outputs_) {
    if (output.name == name) return output;
  }
  outputs_.push_back(Output{name, {}, 0});
  return outputs_.back();
}

ChunkReplay::Verdict ChunkReplay::Take(const OutputChunk& chunk) {
  Output& output = OutputFor(chunk.name);
  const uint64_t digest = Digest(chunk);
  if (output.next == output.digests.size()) {
    output.digests.push_back(digest);
    ++output.next;
    return Verdict::kNew;
  }
  const size_t index = output.next++;
  if (output.digests[index] == digest) return Verdict::kRepeated;
  divergence_ = "output '" + output.name + "' chunk " + std::to_string(index + 1) + " of " +
                std::to_string(output.digests.size()) +
                " sent before differs when recomputed (the model's outputs are not reproducible: "
                "does it sample without the request's seed, or depend on its batch?)";
  return Verdict::kDiverged;
}

std::string ChunkReplay::Unrepeated() const {
  for (const Output& output : outputs_) {
    if (output.next == output.digests.size()) continue;
    return "output '" + output.name + "' was sent " + std::to_string(output.digests.size()) +
           " chunks before, and " + std::to_string(output.next) + " when recomputed";
  }
  return "";
}

void ChunkReplay::Rewind() {
  for (Output& output : outputs_) output.next = 0;
}

}  // namespace mstar
