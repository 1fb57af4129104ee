// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// A small harness for side-by-side measurements: time a candidate and its baseline in the same
// run, interleaved, and report the best of several repetitions (the minimum is the figure least
// disturbed by a noisy machine). Rows go to stdout as JSON lines; progress goes to stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mstar::bench {

struct Row {
  std::string name;
  double figure = 0;    // the measurement
  std::string unit;     // e.g. "ns/call"
  double baseline = 0;  // the same work done the reference way, in the same unit
  std::string target;   // what we aim for, e.g. "ratio <= 1.5"
  // figure / baseline
  double ratio() const { return baseline > 0 ? figure / baseline : 0; }
};

// Nanoseconds per call of body (which performs `work` operations per call), the minimum over
// `repetitions` runs of about `seconds_per_run` each.
double NanosPerOp(const std::function<void()>& body, uint64_t work = 1, int repetitions = 5,
                  double seconds_per_run = 0.1);

// Measures candidate and baseline alternately and returns {candidate ns/op, baseline ns/op}.
std::pair<double, double> SideBySide(const std::function<void()>& candidate,
                                     const std::function<void()>& baseline, uint64_t work = 1,
                                     int rounds = 5);

// The median of samples with a distribution-free 95% confidence interval: the order statistics
// at n/2 -+ 0.98 sqrt(n) (the binomial's normal approximation), clamped to the samples. With
// fewer than 6 samples the interval is the whole range. values must not be empty.
struct MedianInterval {
  double median = 0;
  double low = 0;
  double high = 0;
};
MedianInterval MedianWithInterval(std::vector<double> values);

// Prints a row as one JSON line on stdout; a note (how sure the figure is, e.g. its confidence
// interval) goes in as key "note" when not empty.
void Emit(const Row& row, const std::string& note = "");

// Keeps a value alive so the optimizer cannot drop the work that made it.
template <typename T>
inline void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

}  // namespace mstar::bench
