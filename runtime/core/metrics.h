// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Metrics: named counters (monotonic sums) and gauges (last value), process-wide. Plugins report
// into it through the host table; the runtime reports its own figures the same way.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace mstar {

class Metrics {
 public:
  static Metrics& Global();

  void Add(const std::string& name, int64_t delta);
  void Set(const std::string& name, double value);
  int64_t Counter(const std::string& name) const;
  double Gauge(const std::string& name) const;
  std::map<std::string, int64_t> Counters() const;
  std::map<std::string, double> Gauges() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> counters_;
  std::map<std::string, double> gauges_;
};

}  // namespace mstar
