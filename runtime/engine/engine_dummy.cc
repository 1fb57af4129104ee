// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Warmup's dummy steps (engine/dummy_step.h): whole-forward captures take their padding
// templates and resource views from one, region captures run one eagerly to learn what the
// forward hands each region.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "capture/buckets.h"
#include "engine/dummy_step.h"
#include "engine/engine.h"
#include "plugin/submodule_descriptors.h"

namespace mstar {
namespace {

// Dummy request ids: far above anything the conductor hands out.
constexpr RequestId kDummyIdBase = RequestId{1} << 62;

// Unique per (node, slot, row); slot -1 (an eager warmup step) has its own ids.
static_assert(kMaxCaptureBatch < (1u << 20) && kMaxCaptureSlotIds < (1 << 20));
RequestId DummyId(int node, int32_t slot, uint32_t row) {
  return kDummyIdBase | (static_cast<uint64_t>(node) << 40) |
         (static_cast<uint64_t>(static_cast<uint32_t>(slot + 1)) << 20) | row;
}

// The inputs node receives in walk (walk inputs and node-to-node edges), in order.
std::vector<std::string> NodeInputs(const ModelSpec& model, const std::string& walk,
                                    const std::string& node) {
  std::vector<std::string> names;
  auto it = model.walks.find(walk);
  if (it == model.walks.end()) return names;
  auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const WalkInputSpec& input : it->second.inputs) {
    if (input.node == node) add(input.input);
  }
  for (const EdgeSpec& edge : it->second.edges) {
    if (edge.kind == EdgeSpec::Kind::kNode && edge.to_node == node) add(edge.to_input);
  }
  return names;
}

Result<mstar_tensor_t*> Zeros(uint32_t count) {
  MSTAR_ASSIGN_OR_RETURN(mstar_tensor_t * t,
                         AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                                        {static_cast<int64_t>(count)}));
  std::memset(t->dl.data, 0, TensorNumBytes(t->dl));
  return t;
}

}  // namespace

mstar_step_t DummyStep::Step(const NodeRuntime& node,
                             const std::vector<const mstar_tensor_map_t*>& inputs,
                             const std::vector<mstar_tensor_map_t*>& outputs,
                             std::vector<mstar_resource_view_t>& resource_views,
                             const std::vector<const mstar_tensor_map*>& planned,
                             mstar_stream* stream) {
  resource_views.clear();
  for (size_t k = 0; k < node.resources.size(); ++k) {
    resource_views.push_back({sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR,
                              node.resources[k]->label.c_str(), planned[k]});
  }
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.struct_version = MSTAR_ABI_MINOR;
  step.node = node.name.c_str();
  step.walk = walk->c_str();
  step.num_requests = static_cast<uint32_t>(rows.size());
  step.slot = decl.slot;
  step.requests = infos.data();
  step.inputs = inputs.data();
  step.num_tokens = tokens.data();
  step.num_resources = static_cast<uint32_t>(resource_views.size());
  step.resources = resource_views.empty() ? nullptr : resource_views.data();
  step.outputs = outputs.data();
  step.stream = stream;
  return step;
}

void DummyStep::Leave() {
  for (ResourceRuntime* resource : joined) {
    std::lock_guard<std::mutex> lock(resource->mutex);
    resource->AbortStep(decl);
    for (mstar_request_id_t id : ids) resource->RemoveRequest(id);
  }
  joined.clear();
}

Status Engine::PrepareDummyStep(NodeRuntime& node, const mstar_capture_config_t& config,
                                const mstar_capture_bucket_t& bucket, int32_t slot,
                                DummyStep& out) {
  if (config.capture_walk == nullptr) return InvalidArgument("the config names no capture walk");
  auto walk = runtime_->model().walks.find(config.capture_walk);
  if (walk == runtime_->model().walks.end()) {
    return NotFound(fmt::format("the model has no walk '{}'", config.capture_walk));
  }
  std::vector<std::string> names = NodeInputs(runtime_->model(), walk->first, node.name);
  if (names.empty()) return NotFound("the node receives no inputs in the capture walk");
  const bool packed = (config.flags & MSTAR_CAPTURE_PACKED) != 0;
  const uint32_t rows = CapturedRows(bucket);
  out.walk = &walk->first;

  // Dummy rows through prepare_inputs. When one fails, the rows prepared before it are known to
  // the submodule: it forgets them again.
  out.rows.assign(rows, mstar_request_info_t{});
  out.tokens.assign(rows, 0);
  auto forget_prepared = [&](uint32_t prepared_rows, const Status& failure) {
    std::lock_guard<std::mutex> lock(node.mutex);
    for (uint32_t done = 0; done < prepared_rows; ++done)
      node.CleanupRequest(out.rows[done].request_id);
    return failure;
  };
  for (uint32_t r = 0; r < rows; ++r) {
    uint32_t tokens = packed ? bucket.num_tokens / rows : RowTokens(bucket);
    if (packed && r == 0) tokens += bucket.num_tokens % rows;
    mstar_request_info_t& info = out.rows[r];
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = DummyId(node.index, slot, r);
    info.walk = walk->first.c_str();
    info.partition = walk->second.partition.c_str();
    info.params = empty_params_->root();
    TensorMapPtr inputs = NewTensorMap();
    for (const std::string& name : names) {
      Result<mstar_tensor_t*> zeros = Zeros(std::max<uint32_t>(tokens, 1));
      if (!zeros.ok()) return forget_prepared(r, zeros.status());
      if (Status appended = inputs->Append(name, zeros.value()); !appended.ok())
        return forget_prepared(r, appended);
    }
    out.prepared.push_back(NewTensorMap());
    mstar_prepared_t prepared{sizeof(mstar_prepared_t), MSTAR_ABI_MINOR, 0, 0, 0,
                              out.prepared.back().get()};
    Status made;
    {
      std::lock_guard<std::mutex> lock(node.mutex);
      made = CallPlugin(*node.instance, "prepare_inputs", [&] {
        return node.table()->prepare_inputs(node.instance->self(), &info, inputs.get(), &prepared);
      });
      if (made.ok() && prepared.decline != 0)
        made = FailedPrecondition("prepare_inputs declined a dummy request");
    }
    if (!made.ok()) return forget_prepared(r, made);
    out.tokens[r] = prepared.num_tokens;
  }

  // The dummies take part in the node's resources for the warmup step only.
  for (const mstar_request_info_t& info : out.rows) {
    out.ids.push_back(info.request_id);
    out.infos.push_back(&info);
  }
  out.decl = mstar_step_decl_t{sizeof(mstar_step_decl_t),
                               MSTAR_ABI_MINOR,
                               node.name.c_str(),
                               walk->first.c_str(),
                               rows,
                               slot,
                               out.ids.data(),
                               out.tokens.data(),
                               out.infos.data(),
                               0,
                               0,
                               nullptr};  // a dummy adds no known tokens
  mstar_stream* stream = NodeStreams(node).exec();
  Status joined = JoinDummyStep(node, stream, out);
  if (!joined.ok()) {
    // The destructor (or Leave) undoes what the resources joined; the submodule, which prepared
    // every dummy, forgets them here (no slot records them yet).
    std::lock_guard<std::mutex> lock(node.mutex);
    for (const mstar_request_info_t& info : out.rows) node.CleanupRequest(info.request_id);
  }
  return joined;
}

Status Engine::JoinDummyStep(NodeRuntime& node, mstar_stream* stream, DummyStep& out) {
  const uint32_t rows = static_cast<uint32_t>(out.rows.size());
  for (ResourceRuntime* resource : node.resources) {
    std::lock_guard<std::mutex> lock(resource->mutex);
    const mstar_resource_vtable_t* t = resource->table();
    void* self = resource->instance->self();
    Status planned;
    for (const mstar_request_info_t* info : out.infos) {
      planned = CallPlugin(*resource->instance, "add_request",
                           [&] { return t->add_request(self, info); });
      if (!planned.ok()) break;
    }
    out.joined.push_back(resource);
    if (planned.ok()) {
      planned =
          CallPlugin(*resource->instance, "declare", [&] { return t->declare(self, &out.decl); });
    }
    for (uint32_t k = 0; k < rows && planned.ok(); ++k) {
      mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, MSTAR_ADMIT_READY, 0, 0};
      planned = CallPlugin(*resource->instance, "admit",
                           [&] { return t->admit(self, &out.decl, k, &admit); });
      if (planned.ok() && admit.outcome != MSTAR_ADMIT_READY) {
        planned =
            ResourceExhausted("resource '" + resource->label + "' cannot admit the dummy requests");
      }
    }
    if (planned.ok()) {
      out.views.push_back(NewTensorMap());
      planned = CallPlugin(*resource->instance, "plan", [&] {
        return t->plan(self, &out.decl, out.views.back().get(), stream);
      });
    }
    if (!planned.ok()) return planned;
  }
  return Status::Ok();
}

}  // namespace mstar
