// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// ChunkReplay: what a request's client has been sent, remembered as one digest per chunk for
// each output name, so that a request recomputed from its prompt (a resource lost its offloaded
// state) sends nothing twice. After Rewind, the first chunks of each name are expected again, in
// the order they were sent: each is compared with the one sent before and held back, and one that
// differs is reported (the client holds outputs the recomputation does not reproduce: a model
// that samples without a seed, or picks other tokens in another batch). Past what was sent,
// chunks are new again and remembered as they go.
//
// A chunk of integer values (tokens, text) is compared whole: values and bytes. A chunk without
// (audio samples, floats, raw bytes) is compared by size only, since its last bits may differ
// with the batch it was computed in and the client is none the worse for it.
//
// Costs 8 bytes and a hash of the payloads per chunk sent. Not thread-safe: its stream's writer
// owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/small_vector.h"

namespace mstar {

struct OutputChunk;

class ChunkReplay {
 public:
  enum class Verdict {
    kNew,       // not sent before: send it
    kRepeated,  // sent before, the same: hold it back
    kDiverged,  // sent before, and this one differs: the request cannot go on
  };

  // Called for each chunk the request produces, in the order it produces them.
  Verdict Take(const OutputChunk& chunk);
  // The chunks remembered so far are expected again, from each name's first.
  void Rewind();
  // After kDiverged: which chunk differed, for the request's error.
  const std::string& divergence() const { return divergence_; }
  // When a rewound request ends: which output was not sent again in full ("" when every one was),
  // for the request's error (its recomputation stopped short of what the client holds).
  std::string Unrepeated() const;

 private:
  struct Output {
    std::string name;
    std::vector<uint64_t> digests;  // one per chunk sent, in order
    size_t next = 0;                // the next expected again (== digests.size(): none)
  };
  Output& OutputFor(const std::string& name);

  boost::container::small_vector<Output, 2> outputs_;
  std::string divergence_;
};

}  // namespace mstar
