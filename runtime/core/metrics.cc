// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/metrics.h"

#include <limits>

namespace mstar {

Metrics& Metrics::Global() {
  static Metrics metrics;
  return metrics;
}

void Metrics::Add(const std::string& name, int64_t delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t& counter = counters_[name];
  // Saturates rather than wrapping (signed overflow is undefined): a plugin may add anything.
  if (__builtin_add_overflow(counter, delta, &counter))
    counter = delta > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

void Metrics::Set(const std::string& name, double value) {
  std::lock_guard<std::mutex> lock(mutex_);
  gauges_[name] = value;
}

int64_t Metrics::Counter(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = counters_.find(name);
  return it == counters_.end() ? 0 : it->second;
}

double Metrics::Gauge(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = gauges_.find(name);
  return it == gauges_.end() ? 0.0 : it->second;
}

std::map<std::string, int64_t> Metrics::Counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

std::map<std::string, double> Metrics::Gauges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gauges_;
}

}  // namespace mstar
