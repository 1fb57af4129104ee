// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "common/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

namespace mstar::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsFor(const std::function<void()>& body, uint64_t iterations) {
  auto start = Clock::now();
  for (uint64_t i = 0; i < iterations; ++i) body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Iterations that take about `seconds`.
uint64_t Calibrate(const std::function<void()>& body, double seconds) {
  uint64_t iterations = 1;
  while (true) {
    double took = SecondsFor(body, iterations);
    if (took >= seconds / 10 || iterations > (1ull << 40)) {
      return std::max<uint64_t>(1,
                                static_cast<uint64_t>(iterations * seconds / std::max(took, 1e-9)));
    }
    iterations *= 10;
  }
}

}  // namespace

double NanosPerOp(const std::function<void()>& body, uint64_t work, int repetitions,
                  double seconds_per_run) {
  uint64_t iterations = Calibrate(body, seconds_per_run);
  double best = std::numeric_limits<double>::max();
  for (int r = 0; r < repetitions; ++r) {
    best =
        std::min(best, SecondsFor(body, iterations) * 1e9 / static_cast<double>(iterations * work));
  }
  return best;
}

std::pair<double, double> SideBySide(const std::function<void()>& candidate,
                                     const std::function<void()>& baseline, uint64_t work,
                                     int rounds) {
  double best_candidate = std::numeric_limits<double>::max();
  double best_baseline = std::numeric_limits<double>::max();
  for (int r = 0; r < rounds; ++r) {
    best_candidate = std::min(best_candidate, NanosPerOp(candidate, work, 1));
    best_baseline = std::min(best_baseline, NanosPerOp(baseline, work, 1));
  }
  return {best_candidate, best_baseline};
}

MedianInterval MedianWithInterval(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double half_width = 0.98 * std::sqrt(static_cast<double>(n));
  const double center = static_cast<double>(n) / 2;
  // 1-based ranks floor(center - half_width) and ceil(center + half_width), as 0-based indices.
  const auto low = static_cast<size_t>(std::max(1.0, std::floor(center - half_width))) - 1;
  const auto high = std::min(n, static_cast<size_t>(std::ceil(center + half_width))) - 1;
  return MedianInterval{values[n / 2], values[n < 6 ? 0 : low], values[n < 6 ? n - 1 : high]};
}

void Emit(const Row& row, const std::string& note) {
  nlohmann::json j = {{"name", row.name},         {"figure", row.figure}, {"unit", row.unit},
                      {"baseline", row.baseline}, {"ratio", row.ratio()}, {"target", row.target}};
  if (!note.empty()) j["note"] = note;
  std::cout << j.dump() << std::endl;
  std::cerr << "  " << row.name << ": " << row.figure << " " << row.unit << " (baseline "
            << row.baseline << ", ratio " << row.ratio() << (note.empty() ? "" : ", " + note)
            << ")\n";
}

}  // namespace mstar::bench
