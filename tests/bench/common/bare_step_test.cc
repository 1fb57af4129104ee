// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// bench::BareStep::FinishColumnar: the bare loop's stop check after a columnar step gives each
// request its own mask, as the engine's does (the echo plugin ends a request the step after its
// source runs out).
#include "common/bare_step.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support.h"

namespace mstar {
namespace {

TEST(BareStep, FinishColumnarGivesEachRequestItsStopMask) {
  PluginRegistry registry = test::LoadOnly({std::string(MSTAR_BUILD_DIR) + "/lib/mstar/plugins"});
  Result<FactoryRef> factory = registry.Find(MSTAR_KIND_SUBMODULE, "echo");
  ASSERT_TRUE(factory.ok()) << factory.status().ToString();
  InstanceOptions options;
  options.name = "echo";
  auto instance = PluginInstance::Create(factory.value(), options);
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  bench::BareStep step(*instance.value(), nullptr);
  // Request 0's source is one token, request 1's two: echo emits 7 for both, then its end token
  // for request 0 (whose loop the stop check ends) and 8 for request 1.
  bench::BareBatch batch(2, 1);
  TensorMapPtr inputs = NewTensorMap();
  TensorMapPtr input_rows = NewTensorMap();
  inputs->AppendHost("tokens", bench::Int64Tensor({7, 7, 8}));
  input_rows->AppendHost("tokens", bench::Int64Tensor({0, 1, 3}));
  auto [first, first_rows] = step.RunColumnar(batch, "decode", *inputs, *input_rows);
  EXPECT_EQ(step.FinishColumnar(batch, "decode", *first, *first_rows, "token"),
            (std::vector<uint64_t>{0, 0}));
  bench::FeedBackWhole(*first, "token", &inputs, &input_rows);
  ++batch.iterations[0];
  ++batch.iterations[1];
  auto [second, second_rows] = step.RunColumnar(batch, "decode", *inputs, *input_rows);
  EXPECT_EQ(step.FinishColumnar(batch, "decode", *second, *second_rows, "token"),
            (std::vector<uint64_t>{1, 0}));
}

}  // namespace
}  // namespace mstar
