// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Conductor::Pending: client-facing work decided under the conductor's lock and carried out after
// it is released (encoding outputs, pushing them to client streams, removing finished requests
// from the engine), in the order it was decided.
#pragma once

#include "engine/conductor.h"

namespace mstar {

struct Conductor::PendingEmit {
  std::shared_ptr<RequestStream> stream;
  mstar_request_info_t info{};  // info, name and modality: only with tensors to encode
  std::string name;
  std::string modality;
  TensorList tensors;               // to encode after the lock (the controller encodes)
  std::vector<OutputChunk> chunks;  // encoded already (default encodings, no plugin call)
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

// Encodes an emitted tensor for the client: the controller's encode_output when it has one,
// otherwise text modality as one byte per integer element and anything else as raw bytes.
OutputChunk EncodeOutput(PluginInstance* controller, std::mutex* controller_mutex,
                         const mstar_request_info_t& info, const std::string& name,
                         const std::string& modality, const mstar_tensor_t& tensor, Status* error);

}  // namespace mstar
