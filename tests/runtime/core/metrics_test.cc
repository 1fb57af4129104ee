// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Metrics: counters count up and down and saturate at the int64 range instead of wrapping (a
// plugin's counter_add may pass anything).
#include "core/metrics.h"

#include <gtest/gtest.h>

#include <limits>

namespace mstar {
namespace {

TEST(Metrics, CountersCountBothWaysAndSaturate) {
  Metrics metrics;
  metrics.Add("held", 3);
  metrics.Add("held", -2);
  EXPECT_EQ(metrics.Counter("held"), 1);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  metrics.Add("big", kMax);
  metrics.Add("big", kMax);
  EXPECT_EQ(metrics.Counter("big"), kMax);
  metrics.Add("small", std::numeric_limits<int64_t>::min());
  metrics.Add("small", -1);
  EXPECT_EQ(metrics.Counter("small"), std::numeric_limits<int64_t>::min());
}

}  // namespace
}  // namespace mstar
