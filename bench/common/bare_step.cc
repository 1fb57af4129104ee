// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "common/bare_step.h"

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "host/host_api.h"
#include "plugin/columnar.h"
#include "plugin/slots.h"
#include "plugin/step_arrays.h"

namespace mstar::bench {

void CheckPlugin(mstar_status_t* status, const char* what) {
  if (status == nullptr) return;
  std::cerr << "bare loop: " << what << ": " << TakeStatus(status).ToString() << "\n";
  std::abort();
}

mstar_tensor_t* Int64Tensor(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                     {static_cast<int64_t>(values.size())});
  MSTAR_CHECK(t.ok());
  auto* data = static_cast<int64_t*>(t.value()->dl.data);
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return t.value();
}

BareBatch::BareBatch(size_t count, uint64_t first_id)
    : params(std::make_shared<ConfigTree>()),
      infos(count),
      iterations(count, 0),
      limits(count, 1u << 30) {
  for (size_t i = 0; i < count; ++i) {
    mstar_request_info_t& info = infos[i];
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.request_id = first_id + i;
    info.partition = "main";
    info.num_loops = 1;
    info.loop_names = &loop_name;
    info.loop_iterations = &iterations[i];
    info.loop_max_iterations = &limits[i];
    info.seed = info.request_id;
    info.params = params->root();
    inputs.push_back(NewTensorMap());
  }
}

void BareBatch::FeedBack(size_t i, const TensorMapPtr& outputs, const char* name) {
  mstar_tensor_map::Entry* out = outputs->Find(name);
  MSTAR_CHECK(out != nullptr && !out->tensors.empty());
  inputs[i]->Remove("tokens");
  Result<mstar_tensor_t*> shared = ShareTensor(out->tensors[0]);
  MSTAR_CHECK(shared.ok() && inputs[i]->Append("tokens", shared.value()).ok());
}

void FeedBackWhole(const mstar_tensor_map& outputs, const char* name, TensorMapPtr* inputs,
                   TensorMapPtr* input_rows) {
  const mstar_tensor_map::Entry* out = outputs.Find(name);
  MSTAR_CHECK(out != nullptr && !out->tensors.empty());
  Result<mstar_tensor_t*> shared = ShareTensor(out->tensors[0]);
  MSTAR_CHECK(shared.ok());
  *inputs = NewTensorMap();
  *input_rows = NewTensorMap();
  (*inputs)->AppendHost("tokens", shared.value());
}

BareStep::BareStep(PluginInstance& submodule, PluginInstance* resource, std::string label)
    : submodule_(submodule), resource_(resource), label_(std::move(label)) {
  mstar_submodule_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
  CheckPlugin(submodule_.submodule()->info(submodule_.self(), &info), "info");
  if (info.token_input != nullptr) token_input_ = info.token_input;
}

std::vector<TensorMapPtr> BareStep::Run(BareBatch& batch, const char* walk) {
  const size_t size = batch.size();
  std::vector<TensorMapPtr> prepared(size), outputs(size);
  StepArrays arrays;
  const mstar_submodule_vtable_t* sub = submodule_.submodule();
  for (size_t i = 0; i < size; ++i) {
    batch.infos[i].walk = walk;
    prepared[i] = NewTensorMap();
    mstar_prepared_t out{sizeof(mstar_prepared_t), MSTAR_ABI_MINOR, 0, 0, 0, prepared[i].get()};
    CheckPlugin(
        sub->prepare_inputs(submodule_.self(), &batch.infos[i], batch.inputs[i].get(), &out),
        "prepare_inputs");
    MSTAR_CHECK(out.decline == 0);
    outputs[i] = NewTensorMap();
    arrays.Add(&batch.infos[i], prepared[i].get(), out.num_tokens, outputs[i].get());
  }
  mstar_step_decl_t decl = arrays.Decl("bare", walk);
  std::vector<const mstar_tensor_t*> input_tokens;  // as the engine hands them to resources
  for (size_t i = 0; i < size; ++i)
    input_tokens.push_back(TokenInputOf(*batch.inputs[i], token_input_, arrays.tokens[i]));
  decl.input_tokens = input_tokens.data();
  TensorMapPtr view = NewTensorMap();
  mstar_resource_view_t resource_view{sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR,
                                      label_.c_str(), view.get()};
  const bool planned = PlanResource(decl, view.get());
  mstar_step_t step = arrays.Step("bare", walk, planned ? &resource_view : nullptr);
  Forward(step);
  CommitResource(decl);
  return outputs;
}

bool BareStep::PlanResource(const mstar_step_decl_t& decl, mstar_tensor_map* view) {
  if (resource_ == nullptr) return false;
  const mstar_resource_vtable_t* res = resource_->resource();
  CheckPlugin(res->declare(resource_->self(), &decl), "declare");
  for (uint32_t i = 0; i < decl.num_requests; ++i) {
    mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, 0, 0, 0};
    CheckPlugin(res->admit(resource_->self(), &decl, i, &admit), "admit");
    MSTAR_CHECK(admit.outcome == MSTAR_ADMIT_READY);  // baselines size pools for everyone
  }
  CheckPlugin(res->plan(resource_->self(), &decl, view, nullptr), "plan");
  return true;
}

void BareStep::CommitResource(const mstar_step_decl_t& decl) {
  if (resource_ == nullptr) return;
  std::vector<uint8_t> succeeded(decl.num_requests, 1);
  CheckPlugin(resource_->resource()->commit(resource_->self(), &decl, succeeded.data(), nullptr),
              "commit");
}

void BareStep::Forward(const mstar_step_t& step) {
  const auto forward_start = std::chrono::steady_clock::now();
  CheckPlugin(submodule_.submodule()->forward_batched(submodule_.self(), &step), "forward_batched");
  forward_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - forward_start)
                                           .count());
}

std::pair<TensorMapPtr, TensorMapPtr> BareStep::RunColumnar(BareBatch& batch, const char* walk,
                                                            const mstar_tensor_map& inputs,
                                                            const mstar_tensor_map& input_rows) {
  const mstar_submodule_vtable_t* sub = submodule_.submodule();
  const size_t size = batch.size();
  StepArrays arrays;
  for (size_t i = 0; i < size; ++i) {
    batch.infos[i].walk = walk;
    arrays.Add(&batch.infos[i], nullptr, 0, nullptr);
  }
  mstar_step_t step = EagerStep("bare", walk, static_cast<uint32_t>(size), arrays.infos.data(),
                                arrays.tokens.data());
  step.columnar_inputs = &inputs;
  step.input_rows = &input_rows;
  TensorMapPtr prepared = NewTensorMap();
  TensorMapPtr prepared_rows = NewTensorMap();
  CheckPlugin(sub->prepare_inputs_columnar(submodule_.self(), &step, prepared.get(),
                                           prepared_rows.get(), arrays.tokens.data()),
              "prepare_inputs_columnar");
  mstar_step_decl_t decl = arrays.Decl("bare", walk);
  row_tokens_.Build(inputs, input_rows, token_input_, arrays.tokens);
  decl.input_tokens = row_tokens_.views().data();
  TensorMapPtr view = NewTensorMap();
  mstar_resource_view_t resource_view{sizeof(mstar_resource_view_t), MSTAR_ABI_MINOR,
                                      label_.c_str(), view.get()};
  if (PlanResource(decl, view.get())) {
    step.num_resources = 1;
    step.resources = &resource_view;
  }
  TensorMapPtr outputs = NewTensorMap();
  TensorMapPtr output_rows = NewTensorMap();
  step.columnar_inputs = prepared.get();
  step.input_rows = prepared_rows.get();
  step.columnar_outputs = outputs.get();
  step.output_rows = output_rows.get();
  Forward(step);
  CommitResource(decl);
  return {std::move(outputs), std::move(output_rows)};
}

const std::vector<uint64_t>& BareStep::FinishColumnar(BareBatch& batch, const char* walk,
                                                      const mstar_tensor_map& outputs,
                                                      const mstar_tensor_map& output_rows,
                                                      const char* stop_output) {
  const auto size = static_cast<uint32_t>(batch.size());
  const mstar_submodule_vtable_t* sub = submodule_.submodule();
  masks_.assign(size, 0);
  infos_.resize(size);
  for (uint32_t i = 0; i < size; ++i) infos_[i] = &batch.infos[i];
  if (MSTAR_HAS_SLOT(sub, check_stop_columnar, 1) && sub->check_stop_columnar != nullptr) {
    mstar_step_t check = EagerStep("bare", walk, size, infos_.data(), nullptr);
    CheckPlugin(
        sub->check_stop_columnar(submodule_.self(), &check, &outputs, &output_rows, masks_.data()),
        "check_stop_columnar");
  }
  if (resource_ == nullptr || resource_->resource()->extend_prefix_chains == nullptr) return masks_;
  const mstar_tensor_map::Entry* tokens = outputs.Find(stop_output);
  MSTAR_CHECK(tokens != nullptr && !tokens->tensors.empty());
  const RowOffsets offsets(output_rows, stop_output, 0);
  for (uint32_t i = 0; i < size; ++i) {
    mstar_tensor_t view;
    RowView(*tokens->tensors.front(), offsets.begin(i), offsets.count(i), &view, &row_dims_);
    CheckPlugin(resource_->resource()->extend_prefix_chains(resource_->self(),
                                                            batch.infos[i].request_id, &view),
                "extend_prefix_chains");
  }
  return masks_;
}

}  // namespace mstar::bench
