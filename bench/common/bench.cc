// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "common/bench.h"

#include <algorithm>
#include <chrono>
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

void Emit(const Row& row) {
  nlohmann::json j = {{"name", row.name},         {"figure", row.figure}, {"unit", row.unit},
                      {"baseline", row.baseline}, {"ratio", row.ratio()}, {"target", row.target}};
  std::cout << j.dump() << std::endl;
  std::cerr << "  " << row.name << ": " << row.figure << " " << row.unit << " (baseline "
            << row.baseline << ", ratio " << row.ratio() << ")\n";
}

}  // namespace mstar::bench
