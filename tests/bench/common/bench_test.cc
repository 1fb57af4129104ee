// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "common/bench.h"

#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace mstar::bench {
namespace {

std::vector<double> OneTo(int n) {
  std::vector<double> values;
  for (int i = 1; i <= n; ++i) values.push_back(i);
  return values;
}

TEST(MedianWithInterval, GivesTheOrderStatisticsAroundTheMedian) {
  // 101 samples: ranks floor(50.5 - 0.98 * sqrt(101)) = 40 and ceil(50.5 + 9.85) = 61.
  MedianInterval interval = MedianWithInterval(OneTo(101));
  EXPECT_EQ(interval.median, 51);
  EXPECT_EQ(interval.low, 40);
  EXPECT_EQ(interval.high, 61);
}

TEST(MedianWithInterval, SortsItsInput) {
  std::vector<double> values = OneTo(101);
  std::shuffle(values.begin(), values.end(), std::mt19937(7));
  MedianInterval interval = MedianWithInterval(values);
  EXPECT_EQ(interval.median, 51);
  EXPECT_EQ(interval.low, 40);
  EXPECT_EQ(interval.high, 61);
}

TEST(MedianWithInterval, NarrowsAsSamplesGrow) {
  // The same spread of values, sampled 4 times as densely: the interval's width in values halves.
  std::vector<double> coarse, fine;
  for (int i = 0; i < 100; ++i) coarse.push_back(i / 100.0);
  for (int i = 0; i < 400; ++i) fine.push_back(i / 400.0);
  MedianInterval a = MedianWithInterval(coarse), b = MedianWithInterval(fine);
  EXPECT_NEAR((b.high - b.low) / (a.high - a.low), 0.5, 0.05);
}

TEST(MedianWithInterval, TakesTheWholeRangeForFewSamples) {
  MedianInterval interval = MedianWithInterval({3, 1, 2});
  EXPECT_EQ(interval.median, 2);
  EXPECT_EQ(interval.low, 1);
  EXPECT_EQ(interval.high, 3);
  MedianInterval one = MedianWithInterval({5});
  EXPECT_EQ(one.median, 5);
  EXPECT_EQ(one.low, 5);
  EXPECT_EQ(one.high, 5);
}

TEST(MedianWithInterval, AlwaysContainsTheMedian) {
  for (int n = 1; n <= 64; ++n) {
    MedianInterval interval = MedianWithInterval(OneTo(n));
    EXPECT_LE(interval.low, interval.median) << n;
    EXPECT_GE(interval.high, interval.median) << n;
    EXPECT_GE(interval.low, 1) << n;
    EXPECT_LE(interval.high, n) << n;
  }
}

}  // namespace
}  // namespace mstar::bench
