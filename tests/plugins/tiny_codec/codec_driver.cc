// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugins/tiny_codec/codec_driver.h"

#include <gtest/gtest.h>

#include <cstring>

#include "config/toml_reader.h"
#include "host/host_api.h"
#include "host/tensor_objects.h"
#include "plugins/tiny_codec/tiny_weights.h"
#include "support/test_support.h"

namespace mstar::test {
namespace {

mstar_tensor_t* Tokens(const std::vector<int64_t>& values) {
  Result<mstar_tensor_t*> t =
      AllocateTensor(nullptr, DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 64, 1},
                     {static_cast<int64_t>(values.size())});
  EXPECT_TRUE(t.ok());
  if (!values.empty())
    std::memcpy(t.value()->dl.data, values.data(), values.size() * sizeof(int64_t));
  return t.value();
}

struct FakeRequest {
  FakeRequest(uint64_t id, bool final) {
    info.struct_size = sizeof(info);
    info.struct_version = MSTAR_ABI_MINOR;
    info.flags = final ? MSTAR_REQUEST_FINAL_CHUNK : 0u;
    info.request_id = id;
    info.walk = "audio";
    info.partition = "audio";
    info.params = params->root();
  }
  std::shared_ptr<const ConfigTree> params = std::make_shared<ConfigTree>();
  mstar_request_info_t info{};
};

}  // namespace

const PluginRegistry& CodecRegistry() {
  static const PluginRegistry registry =
      LoadOnly({std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins"});
  return registry;
}

Result<std::unique_ptr<PluginInstance>> MakeCodec(const std::string& config_toml) {
  Result<FactoryRef> factory = CodecRegistry().Find(MSTAR_KIND_SUBMODULE, "tiny_codec");
  if (!factory.ok()) return factory.status();
  Diagnostics problems;
  auto table = ParseTomlText(config_toml, "codec.toml", &problems);
  EXPECT_TRUE(table.has_value()) << config_toml;
  InstanceOptions options;
  options.name = "codec";
  options.config = std::make_shared<ConfigTree>(std::move(*table), "codec.toml", "config");
  return PluginInstance::Create(factory.value(), options);
}

CodecDriver::CodecDriver(int64_t stride, const std::string& extra) {
  Result<std::unique_ptr<PluginInstance>> made =
      MakeCodec("weights = \"" + TinyCodecWeights() + "\"\nstride = " + std::to_string(stride) +
                "\n" + extra);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  if (made.ok()) instance_ = std::move(made.value());
}

Status CodecDriver::TryStep(const std::vector<std::pair<uint64_t, std::vector<int64_t>>>& chunks,
                            std::vector<std::vector<float>>* pcm, bool final) {
  if (!instance_) return FailedPrecondition("no codec instance");
  const mstar_submodule_vtable_t* t = instance_->submodule();
  std::vector<std::unique_ptr<FakeRequest>> requests;
  std::vector<TensorMapPtr> prepared, outputs;
  std::vector<uint32_t> tokens;
  for (const auto& [id, chunk] : chunks) {
    requests.push_back(std::make_unique<FakeRequest>(id, final));
    TensorMapPtr inputs = NewTensorMap();
    MSTAR_RETURN_IF_ERROR(inputs->Append("chunk", Tokens(chunk)));
    prepared.push_back(NewTensorMap());
    mstar_prepared_t out{sizeof(out), MSTAR_ABI_MINOR, 0, 0, 0, prepared.back().get()};
    MSTAR_RETURN_IF_ERROR(TakeStatus(
        t->prepare_inputs(instance_->self(), &requests.back()->info, inputs.get(), &out)));
    tokens.push_back(out.num_tokens);
    outputs.push_back(NewTensorMap());
  }
  auto run = [&](size_t begin, size_t count) {
    std::vector<const mstar_request_info_t*> infos;
    std::vector<const mstar_tensor_map_t*> ins;
    std::vector<mstar_tensor_map_t*> outs;
    for (size_t i = begin; i < begin + count; ++i) {
      infos.push_back(&requests[i]->info);
      ins.push_back(prepared[i].get());
      outs.push_back(outputs[i].get());
    }
    mstar_step_t step{};
    step.struct_size = sizeof(step);
    step.node = "codec";
    step.walk = "audio";
    step.num_requests = static_cast<uint32_t>(count);
    step.slot = -1;
    step.requests = infos.data();
    step.inputs = ins.data();
    step.num_tokens = tokens.data() + begin;
    step.outputs = outs.data();
    return TakeStatus(count == 1 ? t->forward(instance_->self(), &step)
                                 : t->forward_batched(instance_->self(), &step));
  };
  if (pcm == nullptr) return Internal("no output vector");
  pcm->clear();
  // One step over all the chunks: forward for one request, forward_batched for more; then, as
  // the engine does, postprocess per request (the codec cuts each chunk to its fresh samples).
  MSTAR_RETURN_IF_ERROR(run(0, chunks.size()));
  for (size_t i = 0; i < chunks.size(); ++i) {
    MSTAR_RETURN_IF_ERROR(
        TakeStatus(t->postprocess(instance_->self(), &requests[i]->info, outputs[i].get())));
  }
  for (const TensorMapPtr& out : outputs) {
    const auto* entry = out->Find("pcm");
    if (entry == nullptr || entry->tensors.size() != 1) return Internal("no single 'pcm' output");
    const mstar_tensor_t* tensor = entry->tensors[0];
    EXPECT_EQ(tensor->dl.dtype.code, kDLFloat);
    EXPECT_EQ(tensor->dl.ndim, 1);
    const auto* data = static_cast<const float*>(tensor->dl.data);
    pcm->emplace_back(data, data + TensorNumElements(tensor->dl));
  }
  return Status::Ok();
}

std::vector<std::vector<float>> CodecDriver::Step(
    const std::vector<std::pair<uint64_t, std::vector<int64_t>>>& chunks, bool batched,
    bool final) {
  std::vector<std::vector<float>> pcm;
  if (batched) {
    Status s = TryStep(chunks, &pcm, final);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return pcm;
  }
  for (const auto& chunk : chunks) {
    std::vector<std::vector<float>> one;
    Status s = TryStep({chunk}, &one, final);
    EXPECT_TRUE(s.ok()) << s.ToString();
    pcm.push_back(one.empty() ? std::vector<float>{} : one[0]);
  }
  return pcm;
}

void CodecDriver::Cleanup(uint64_t request_id) {
  ASSERT_TRUE(instance_);
  instance_->submodule()->cleanup_request(instance_->self(), request_id);
}

}  // namespace mstar::test
