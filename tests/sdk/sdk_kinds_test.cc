// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The SDK's adapters for all four kinds, driven through the real ABI against the test kit plugin
// (tests/plugins/kit_plugin.cc): what a plugin author writes in C++ is what the host sees in C.
#include <gtest/gtest.h>

#include <cstring>

#include "config/toml_reader.h"
#include "host/tensor_objects.h"
#include "plugin/instance.h"
#include "plugin/library.h"
#include "support/test_support.h"

namespace mstar {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

std::shared_ptr<const ConfigTree> Config(const std::string& text) {
  Diagnostics d;
  auto table = ParseTomlText(text, "kit.toml", &d);
  EXPECT_TRUE(table.has_value());
  return std::make_shared<ConfigTree>(std::move(*table), "kit.toml", "config");
}

mstar_tensor_t* Tokens(std::vector<int64_t> values) {
  Result<mstar_tensor_t*> t = AllocateTensor(nullptr, kCpu, DLDataType{kDLInt, 64, 1},
                                             {static_cast<int64_t>(values.size())});
  std::memcpy(t.value()->dl.data, values.data(), values.size() * sizeof(int64_t));
  return t.value();
}

std::vector<int64_t> Values(const mstar_tensor_t* t) {
  const auto* p = static_cast<const int64_t*>(t->dl.data);
  return std::vector<int64_t>(p, p + TensorNumElements(t->dl));
}

// Request bookkeeping the engine normally owns.
struct FakeRequest {
  explicit FakeRequest(mstar_request_id_t id, const char* walk = "decode") {
    info.struct_size = sizeof(info);
    info.request_id = id;
    info.walk = walk;
    info.partition = "default";
    info.num_loops = 1;
    info.loop_names = loop_names;
    info.loop_iterations = iterations;
    info.loop_max_iterations = max_iterations;
    info.params = params->root();
  }
  const char* loop_names[1] = {"decode_loop"};
  uint32_t iterations[1] = {0};
  uint32_t max_iterations[1] = {16};
  std::shared_ptr<const ConfigTree> params = std::make_shared<ConfigTree>();
  mstar_request_info_t info{};
};

class SdkKindsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = std::make_unique<PluginRegistry>(test::LoadOnly({test::TestPluginDir("kit")}));
  }

  std::unique_ptr<PluginInstance> Make(uint32_t kind, const char* name,
                                       const std::string& config = "",
                                       std::vector<mstar_tier_handle_t*> tiers = {}) {
    Result<FactoryRef> factory = registry_->Find(kind, name);
    EXPECT_TRUE(factory.ok()) << factory.status().ToString();
    InstanceOptions options;
    options.name = name;
    options.config = Config(config);
    options.tiers = std::move(tiers);
    auto instance = PluginInstance::Create(factory.value(), options);
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    return std::move(instance.value());
  }

  std::unique_ptr<PluginRegistry> registry_;
};

TEST_F(SdkKindsTest, SubmoduleTableHasExactlyTheOverriddenHooks) {
  auto sub = Make(MSTAR_KIND_SUBMODULE, "kit_add");
  const mstar_submodule_vtable_t* t = sub->submodule();
  EXPECT_NE(t->forward_batched, nullptr);
  EXPECT_NE(t->check_stop, nullptr);
  EXPECT_NE(t->capture_configs, nullptr);
  EXPECT_NE(t->run_region, nullptr);
  EXPECT_NE(t->cleanup_request, nullptr);
  EXPECT_NE(t->postprocess, nullptr);
  EXPECT_EQ(t->check_stop_batched, nullptr);
  EXPECT_EQ(t->warmup, nullptr);
  mstar_submodule_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
  ASSERT_TRUE(TakeStatus(t->info(sub->self(), &info)).ok());
  EXPECT_EQ(info.flags, MSTAR_SUBMODULE_BATCHED | MSTAR_SUBMODULE_DETERMINISTIC);
  ASSERT_EQ(info.num_stop_outputs, 1u);
  EXPECT_STREQ(info.stop_outputs[0], "tokens");
  // Asked again, the SDK answers from the same storage: what the first answer pointed at is
  // borrowed until destroy and stays readable.
  mstar_submodule_info_t again{sizeof(again), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
  ASSERT_TRUE(TakeStatus(t->info(sub->self(), &again)).ok());
  EXPECT_EQ(again.stop_outputs, info.stop_outputs);
  EXPECT_STREQ(info.stop_outputs[0], "tokens");
}

TEST_F(SdkKindsTest, SubmoduleStepThroughTheAbi) {
  auto sub = Make(MSTAR_KIND_SUBMODULE, "kit_add", "add = 10\nstop_at = 13\nmax_batch = 4\n");
  const mstar_submodule_vtable_t* t = sub->submodule();
  FakeRequest request(7);
  TensorMapPtr inputs = NewTensorMap();
  ASSERT_TRUE(inputs->Append("tokens", Tokens({1, 2, 3})).ok());

  TensorMapPtr prepared_map = NewTensorMap();
  mstar_prepared_t prepared{sizeof(prepared), MSTAR_ABI_MINOR, 0, 0, 0, prepared_map.get()};
  ASSERT_TRUE(
      TakeStatus(t->prepare_inputs(sub->self(), &request.info, inputs.get(), &prepared)).ok());
  EXPECT_EQ(prepared.decline, 0u);
  EXPECT_EQ(prepared.num_tokens, 3u);

  TensorMapPtr outputs = NewTensorMap();
  const mstar_request_info_t* requests[] = {&request.info};
  const mstar_tensor_map_t* step_inputs[] = {prepared_map.get()};
  mstar_tensor_map_t* step_outputs[] = {outputs.get()};
  uint32_t tokens[] = {3};
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.node = "lm";
  step.walk = "decode";
  step.num_requests = 1;
  step.slot = -1;
  step.requests = requests;
  step.inputs = step_inputs;
  step.num_tokens = tokens;
  step.outputs = step_outputs;
  ASSERT_TRUE(TakeStatus(t->forward_batched(sub->self(), &step)).ok());
  ASSERT_EQ(outputs->Find("tokens")->tensors.size(), 1u);
  EXPECT_EQ(Values(outputs->Find("tokens")->tensors[0]), (std::vector<int64_t>{11, 12, 13}));

  uint64_t stop = 0;
  ASSERT_TRUE(TakeStatus(t->check_stop(sub->self(), &request.info, outputs.get(), &stop)).ok());
  EXPECT_EQ(stop, 1u);  // 13 >= stop_at: stop loop 0

  uint32_t max_batch = 0;
  ASSERT_TRUE(TakeStatus(t->max_batch_size(sub->self(), "decode", &max_batch)).ok());
  EXPECT_EQ(max_batch, 4u);
}

TEST_F(SdkKindsTest, PluginExceptionsBecomeStatusesForThatCall) {
  auto sub = Make(MSTAR_KIND_SUBMODULE, "kit_add", "fail_request = 9\n");
  FakeRequest request(9);
  TensorMapPtr prepared_map = NewTensorMap();
  TensorMapPtr outputs = NewTensorMap();
  const mstar_request_info_t* requests[] = {&request.info};
  const mstar_tensor_map_t* step_inputs[] = {prepared_map.get()};
  mstar_tensor_map_t* step_outputs[] = {outputs.get()};
  uint32_t tokens[] = {0};
  mstar_step_t step{};
  step.struct_size = sizeof(step);
  step.num_requests = 1;
  step.requests = requests;
  step.inputs = step_inputs;
  step.num_tokens = tokens;
  step.outputs = step_outputs;
  Status status = TakeStatus(sub->submodule()->forward(sub->self(), &step));
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_EQ(status.message(), "kit_add fails request 9 in forward on purpose");

  // A missing input is a NOT_FOUND naming it and what the map holds.
  TensorMapPtr empty = NewTensorMap();
  mstar_prepared_t prepared{sizeof(prepared), MSTAR_ABI_MINOR, 0, 0, 0, prepared_map.get()};
  status = TakeStatus(
      sub->submodule()->prepare_inputs(sub->self(), &request.info, empty.get(), &prepared));
  EXPECT_EQ(status.code(), Code::kNotFound);
  EXPECT_EQ(status.message(), "missing tensor 'tokens' (the map holds nothing)");
  TensorMapPtr other = NewTensorMap();
  ASSERT_TRUE(other->Append("positions", Tokens({1})).ok());
  ASSERT_TRUE(other->Append("text", Tokens({2})).ok());
  status = TakeStatus(
      sub->submodule()->prepare_inputs(sub->self(), &request.info, other.get(), &prepared));
  EXPECT_EQ(status.message(), "missing tensor 'tokens' (the map holds positions, text)");
}

TEST_F(SdkKindsTest, CaptureConfigsAndRegions) {
  auto sub = Make(MSTAR_KIND_SUBMODULE, "kit_add");
  uint32_t count = 0;
  const mstar_capture_config_t* configs = nullptr;
  ASSERT_TRUE(TakeStatus(sub->submodule()->capture_configs(sub->self(), &count, &configs)).ok());
  ASSERT_EQ(count, 1u);
  EXPECT_STREQ(configs[0].capture_walk, "decode");
  ASSERT_EQ(configs[0].num_replay_walks, 1u);
  EXPECT_STREQ(configs[0].replay_walks[0], "decode");
  ASSERT_EQ(configs[0].num_buckets, 3u);
  EXPECT_EQ(configs[0].buckets[2].batch_size, 4u);
  EXPECT_EQ(configs[0].num_slots, 2u);
  EXPECT_EQ(configs[0].region, nullptr);
  // A second call hands out the same configurations; the first call's stay valid.
  uint32_t count_again = 0;
  const mstar_capture_config_t* again = nullptr;
  ASSERT_TRUE(
      TakeStatus(sub->submodule()->capture_configs(sub->self(), &count_again, &again)).ok());
  EXPECT_EQ(again, configs);
  EXPECT_STREQ(configs[0].replay_walks[0], "decode");

  // region_launch from the instance's context runs the plugin's region eagerly.
  TensorMapPtr in = NewTensorMap();
  ASSERT_TRUE(in->Append("x", Tokens({4, 5})).ok());
  TensorMapPtr out = NewTensorMap();
  ASSERT_TRUE(
      TakeStatus(sub->host()->region_launch(sub->context(), "double", in.get(), out.get(), nullptr))
          .ok());
  EXPECT_EQ(Values(out->Find("x")->tensors[0]), (std::vector<int64_t>{8, 10}));
  Status unknown = TakeStatus(
      sub->host()->region_launch(sub->context(), "triple", in.get(), out.get(), nullptr));
  EXPECT_EQ(unknown.code(), Code::kNotFound);
}

TEST_F(SdkKindsTest, ResourceStepProtocol) {
  auto res = Make(MSTAR_KIND_RESOURCE, "kit_counter", "capacity = 10\n");
  const mstar_resource_vtable_t* t = res->resource();
  EXPECT_NE(t->offload, nullptr);
  EXPECT_EQ(t->publish, nullptr);
  FakeRequest a(1), b(2);
  ASSERT_TRUE(TakeStatus(t->add_request(res->self(), &a.info)).ok());
  ASSERT_TRUE(TakeStatus(t->add_request(res->self(), &b.info)).ok());
  mstar_request_id_t ids[] = {1, 2};
  uint32_t tokens[] = {6, 6};
  const mstar_request_info_t* infos[] = {&a.info, &b.info};
  mstar_step_decl_t decl{sizeof(decl), MSTAR_ABI_MINOR, "lm",  "prefill", 2, -1,
                         ids,          tokens,          infos, 0,         0, nullptr};
  ASSERT_TRUE(TakeStatus(t->declare(res->self(), &decl)).ok());
  mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
  ASSERT_TRUE(TakeStatus(t->admit(res->self(), &decl, 0, &admit)).ok());
  EXPECT_EQ(admit.outcome, MSTAR_ADMIT_READY);
  ASSERT_TRUE(TakeStatus(t->admit(res->self(), &decl, 1, &admit)).ok());
  EXPECT_EQ(admit.outcome, MSTAR_ADMIT_NOT_READY);
  EXPECT_EQ(admit.wait_reason, MSTAR_WAIT_CAPACITY);
  EXPECT_EQ(admit.units_short, 2u);
  TensorMapPtr view = NewTensorMap();
  ASSERT_TRUE(TakeStatus(t->plan(res->self(), &decl, view.get(), nullptr)).ok());
  EXPECT_EQ(view->Find("held")->tensors.size(), 1u);
  uint8_t ok[] = {1, 0};
  ASSERT_TRUE(TakeStatus(t->commit(res->self(), &decl, ok, nullptr)).ok());
  mstar_resource_stats_t stats{sizeof(stats), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  ASSERT_TRUE(TakeStatus(t->stats(res->self(), &stats)).ok());
  EXPECT_EQ(stats.used_units, 6u);

  // Unservable: more than the whole capacity. The message reaches the request.
  uint32_t huge[] = {11};
  mstar_step_decl_t big{sizeof(big), MSTAR_ABI_MINOR, "lm", "prefill", 1,      -1, ids + 1,
                        huge,        infos + 1,       0,    0,         nullptr};
  ASSERT_TRUE(TakeStatus(t->declare(res->self(), &big)).ok());
  Status unservable = TakeStatus(t->admit(res->self(), &big, 0, &admit));
  EXPECT_EQ(unservable.code(), Code::kResourceExhausted);
  EXPECT_EQ(unservable.message(), "request needs 11 tokens; capacity is 10");
  t->abort_step(res->self(), &big);

  // Offload and reload.
  uint64_t reclaimed = 0;
  ASSERT_TRUE(TakeStatus(t->offload(res->self(), 1, 0, nullptr, &reclaimed)).ok());
  EXPECT_EQ(reclaimed, 6u);
  uint32_t offloaded = 0, done = 0;
  ASSERT_TRUE(TakeStatus(t->is_offloaded(res->self(), 1, &offloaded)).ok());
  EXPECT_EQ(offloaded, 1u);
  ASSERT_TRUE(TakeStatus(t->reload(res->self(), 1, nullptr, &done)).ok());
  EXPECT_EQ(done, 1u);
  t->remove_request(res->self(), 1);
  t->remove_request(res->self(), 2);
}

TEST_F(SdkKindsTest, TierThroughHostServices) {
  auto tier = Make(MSTAR_KIND_TIER, "kit_memory");
  mstar_tier_handle_t handle;
  handle.name = "kit_memory";
  handle.vtable = tier->tier();
  handle.self = tier->self();
  const mstar_host_api_t* host = tier->host();

  std::vector<uint8_t> block(100), back(100);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 7);
  mstar_tier_op_t ops[3] = {};
  for (auto& op : ops) {
    op.struct_size = sizeof(op);
    op.key.bytes[0] = 42;
    op.device = kCpu;
  }
  ops[0].kind = MSTAR_TIER_OP_PUT;
  ops[0].data = block.data();
  ops[0].size = block.size();
  ops[1].kind = MSTAR_TIER_OP_CONTAINS;
  ops[2].kind = MSTAR_TIER_OP_GET;
  ops[2].data = back.data();
  ops[2].size = back.size();
  mstar_tier_batch_t* batch = nullptr;
  ASSERT_TRUE(TakeStatus(host->tier_submit(&handle, ops, 3, nullptr, &batch)).ok());
  uint32_t done = 0;
  ASSERT_TRUE(TakeStatus(host->tier_poll(&handle, batch, &done)).ok());
  EXPECT_EQ(done, 1u);
  ASSERT_TRUE(TakeStatus(host->tier_wait(&handle, batch, UINT64_MAX)).ok());
  host->tier_release_batch(&handle, batch);
  EXPECT_EQ(ops[0].result, MSTAR_OK);
  EXPECT_EQ(ops[1].result, MSTAR_OK);
  EXPECT_EQ(ops[2].result, MSTAR_OK);
  EXPECT_EQ(back, block);
  mstar_tier_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  ASSERT_TRUE(TakeStatus(host->tier_info(&handle, &info)).ok());
  EXPECT_EQ(info.used_bytes, 100u);
}

TEST_F(SdkKindsTest, ModelControlsWalksAndEncodesOutputs) {
  auto model = Make(MSTAR_KIND_MODEL, "kit_model");
  const mstar_model_vtable_t* t = model->model();
  FakeRequest request(3, "prefill");
  TensorMapPtr inputs = NewTensorMap();
  ASSERT_TRUE(
      TakeStatus(t->encode_prompt(model->self(), &request.info, "hi", 2, inputs.get())).ok());
  EXPECT_EQ(Values(inputs->Find("tokens")->tensors[0]), (std::vector<int64_t>{'h', 'i'}));

  TensorMapPtr extra = NewTensorMap();
  mstar_walk_choice_t choice{sizeof(choice), MSTAR_ABI_MINOR, 0, 0, nullptr, extra.get()};
  ASSERT_TRUE(TakeStatus(t->first_walk(model->self(), &request.info, "default", &choice)).ok());
  EXPECT_STREQ(choice.walk, "prefill");
  mstar_walk_state_t state{};
  state.struct_size = sizeof(state);
  state.request = &request.info;
  state.partition = "default";
  state.finished_walk = "prefill";
  ASSERT_TRUE(TakeStatus(t->next_walk(model->self(), &state, &choice)).ok());
  EXPECT_EQ(choice.done, 0u);
  EXPECT_STREQ(choice.walk, "decode");
  state.finished_walk = "decode";
  ASSERT_TRUE(TakeStatus(t->next_walk(model->self(), &state, &choice)).ok());
  EXPECT_EQ(choice.done, 1u);

  mstar_bytes_t bytes;
  mstar_tensor_t* text = Tokens({'o', 'k'});
  ASSERT_TRUE(
      TakeStatus(t->encode_output(model->self(), &request.info, "out", "text", text, &bytes)).ok());
  EXPECT_EQ(std::string(bytes.data.begin(), bytes.data.end()), "ok#0");  // and its loop's iteration
  Status image =
      TakeStatus(t->encode_output(model->self(), &request.info, "out", "image", text, &bytes));
  EXPECT_EQ(image.code(), Code::kUnsupported);
  ReleaseTensor(text);
}

// MSTAR_PLUGIN_WITH_SHUTDOWN's function runs under the SDK's exception barrier: what it throws
// is logged through the host, naming the hook and the reason, and never reaches the host's call.
TEST(SdkShutdown, WhatAShutdownThrowsIsLoggedAndStaysInThePlugin) {
  ManifestParse parse = ParsePluginManifestFile(test::TestPluginDir("kit") + "/kit.toml");
  ASSERT_TRUE(parse.manifest.has_value());
  Diagnostic error;
  std::shared_ptr<PluginLibrary> kit = PluginLibrary::Load(*parse.manifest, LoadOptions{}, &error);
  ASSERT_NE(kit, nullptr) << error.ToString();
  ASSERT_NE(kit->api()->shutdown, nullptr);
  ASSERT_EQ(::setenv("MSTAR_KIT_SHUTDOWN_THROWS", "1", 1), 0);
  test::LogCapture log;
  EXPECT_NO_THROW(kit->api()->shutdown());
  ::unsetenv("MSTAR_KIT_SHUTDOWN_THROWS");
  EXPECT_TRUE(log.Contains("[kit] shutdown: the kit's shutdown failed, as asked"));
}

}  // namespace
}  // namespace mstar
