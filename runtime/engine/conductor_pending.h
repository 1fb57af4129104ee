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
  RequestId request = 0;
  OutputChunk chunk;                                // when tensor is null
  std::unique_ptr<mstar_tensor_t, Release> tensor;  // for the controller to encode
  mstar_request_info_t info{};                      // info, name and modality: only with a tensor
  const std::string* name = nullptr;  // the edge's (the model spec outlives the conductor)
  const std::string* modality = nullptr;
  // What info points at, held here: the request (and its step's record) may be gone by the time
  // the controller encodes. Keep() takes them; Info() points info at them.
  std::shared_ptr<const ConfigTree> params;
  std::string tenant;  // the tenant salt's bytes
  LoopCounters iterations, limits;
  boost::container::small_vector<const char*, 2> loop_names;  // the walk's (outlives the emit)

  void Keep(const mstar_request_info_t& step_info, std::shared_ptr<const ConfigTree> owner) {
    info = step_info;
    params = std::move(owner);
    if (info.tenant_salt != nullptr)
      tenant.assign(reinterpret_cast<const char*>(info.tenant_salt), info.tenant_salt_size);
    loop_names.assign(info.loop_names, info.loop_names + info.num_loops);
    iterations.assign(info.loop_iterations, info.loop_iterations + info.num_loops);
    limits.assign(info.loop_max_iterations, info.loop_max_iterations + info.num_loops);
  }
  const mstar_request_info_t& Info() {
    info.params = params->root();
    if (info.tenant_salt != nullptr)
      info.tenant_salt = reinterpret_cast<const uint8_t*>(tenant.data());
    info.loop_names = loop_names.data();
    info.loop_iterations = iterations.data();
    info.loop_max_iterations = limits.data();
    return info;
  }
};

// One cohort step's rows for one emit edge (the default encoding; CohortShape refuses controllers
// that encode outputs): the step's output tensor, kept alive by outputs, and per row the client
// stream and the tensor rows it gets. Encoded and pushed after the lock in one pass, with nothing
// allocated per row.
//
// The streams are borrowed: a request leaves the conductor's table only in the Post of a Pending
// whose Finish holds its stream, and pendings are carried in the order they were posted, so the
// stream outlives every pending decided before that one.
struct Conductor::PendingRows {
  struct Row {
    RequestStream* stream = nullptr;
    RequestId request = 0;
    int64_t begin = 0;
    int64_t count = 0;
  };
  std::shared_ptr<ColumnarOutputs> outputs;
  const mstar_tensor_t* tensor = nullptr;
  const EdgeSpec* spec = nullptr;
  std::vector<Row> rows;
};

// A request that ended: its stream is finished with result, or, with again, the request starts
// again from its prompt on the same stream (Conductor::StartAgain).
struct Conductor::PendingFinish {
  struct Again {
    SubmitSpec spec;     // as the client submitted it, with its id and stream
    uint64_t order = 0;  // its place in line (arrival order), kept
    std::string reason;  // why its state was lost
  };
  RequestId id;
  std::shared_ptr<RequestStream> stream;
  RequestResult result;
  std::unique_ptr<Again> again;
};

// A Pending holds either cohort rows (from one cohort step) or per-request emits for a request,
// never both, so carrying the rows first keeps each request's outputs in order.
struct Conductor::Pending {
  using Emit = PendingEmit;
  using Rows = PendingRows;
  using Finish = PendingFinish;
  std::vector<Rows> rows;
  std::vector<Emit> emits;
  std::vector<Finish> finishes;

  bool empty() const { return rows.empty() && emits.empty() && finishes.empty(); }
};

// Encodes an emitted tensor for the client into *chunk (a fresh one: its payloads are appended
// to): the controller's encode_output when it has one, otherwise text modality as one byte per
// integer element and anything else as raw bytes. Written in place, since a chunk's small inline
// payloads are copied, not moved, when the chunk moves.
void EncodeOutput(PluginInstance* controller, std::mutex* controller_mutex,
                  const mstar_request_info_t& info, const std::string& name,
                  const std::string& modality, const mstar_tensor_t& tensor, OutputChunk* chunk,
                  Status* error);

// The default encoding (EncodeOutput without a controller) of rows of one host-managed tensor
// with at least one dimension (a columnar output), set up once per tensor so that each row costs
// only its own elements. Borrows the tensor.
class RowEncoder {
 public:
  RowEncoder(const mstar_tensor_t& t, bool text);
  // Appends rows [begin, begin + count) to *chunk's payloads, as EncodeOutput would encode a
  // view of those rows.
  void Encode(int64_t begin, int64_t count, OutputChunk* chunk) const;

 private:
  DLDataType dtype_;
  const uint8_t* data_ = nullptr;  // null: the tensor is empty
  int64_t row_elements_ = 0;
  uint64_t row_bytes_ = 0;
  bool text_ = false;
  bool one_int64_ = false;  // one int64 per row: a decode step's tokens
};

// Where an edge is declared ("path:line"), for messages about it.
std::string EdgeWhere(const EdgeSpec& edge);
// Why an emit edge's output cannot be sent: it is in device memory.
std::string DeviceEmitError(const EdgeSpec& edge);

}  // namespace mstar
