// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Conductor::Pending: client-facing work decided under the conductor's lock and carried out after
// it is released (encoding outputs, pushing them to client streams, removing finished requests
// from the engine), in the order it was decided.
#pragma once

#include "engine/conductor.h"

namespace mstar {

// One emitted tensor on its way to a client stream: encoded already (the default encodings call no
// plugin, so that is done under the lock) or, with a controller that encodes outputs, a reference
// to encode after the lock. One per tensor, so the common case (one tensor per edge) holds no list.
struct Conductor::PendingEmit {
  struct Release {
    void operator()(mstar_tensor_t* owned) const { ReleaseTensor(owned); }
  };
  std::shared_ptr<RequestStream> stream;
  OutputChunk chunk;                                // when tensor is null
  std::unique_ptr<mstar_tensor_t, Release> tensor;  // for the controller to encode
  mstar_request_info_t info{};                      // info, name and modality: only with a tensor
  const std::string* name = nullptr;  // the edge's (the model spec outlives the conductor)
  const std::string* modality = nullptr;
};

struct Conductor::Pending {
  using Emit = PendingEmit;
  struct Finish {
    RequestId id;
    std::shared_ptr<RequestStream> stream;
    RequestResult result;
  };
  std::vector<Emit> emits;
  std::vector<Finish> finishes;

  bool empty() const { return emits.empty() && finishes.empty(); }
};

// Encodes an emitted tensor for the client into *chunk (a fresh one: its payloads are appended
// to): the controller's encode_output when it has one, otherwise text modality as one byte per
// integer element and anything else as raw bytes. Written in place, since a chunk's small inline
// payloads are copied, not moved, when the chunk moves.
void EncodeOutput(PluginInstance* controller, std::mutex* controller_mutex,
                  const mstar_request_info_t& info, const std::string& name,
                  const std::string& modality, const mstar_tensor_t& tensor, OutputChunk* chunk,
                  Status* error);

// Where an edge is declared ("path:line"), for messages about it.
std::string EdgeWhere(const EdgeSpec& edge);

}  // namespace mstar
