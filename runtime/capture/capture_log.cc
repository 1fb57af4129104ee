// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "capture/capture_log.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/logging.h"

namespace mstar {

const char* CaptureEventKindName(CaptureEventKind kind) {
  switch (kind) {
    case CaptureEventKind::kWarmupRun: return "warmup_run";
    case CaptureEventKind::kCapture: return "capture";
    case CaptureEventKind::kCaptureFailed: return "capture_failed";
    case CaptureEventKind::kReplay: return "replay";
    case CaptureEventKind::kLease: return "lease";
    case CaptureEventKind::kRelease: return "release";
    case CaptureEventKind::kPadding: return "padding";
    case CaptureEventKind::kPrePlan: return "pre_plan";
    case CaptureEventKind::kStaleReplan: return "stale_replan";
    case CaptureEventKind::kReset: return "reset";
    case CaptureEventKind::kEagerFallback: return "eager_fallback";
  }
  return "?";
}

std::string CaptureEvent::ToString() const {
  std::string text = fmt::format(
      "{} node={} walk={} config={} bucket=({},{}) slot={} rows={} "
      "padding={}",
      CaptureEventKindName(kind), node, walk, config, bucket.batch_size, bucket.num_tokens, slot,
      rows, padding);
  if (!region.empty()) text += " region=" + region;
  if (!reason.empty()) text += " reason=" + reason;
  return text;
}

CaptureEvent FallbackEvent(std::string node, std::string walk, std::string region, uint32_t rows,
                           mstar_capture_bucket_t bucket, std::string reason) {
  CaptureEvent event;
  event.kind = CaptureEventKind::kEagerFallback;
  event.node = std::move(node);
  event.walk = std::move(walk);
  event.region = std::move(region);
  event.rows = rows;
  event.bucket = bucket;
  event.reason = std::move(reason);
  return event;
}

void CaptureLog::Append(CaptureEvent event) {
  // Formatted only when shown: a replay appends several events per step.
  if (Log().should_log(spdlog::level::debug)) Log().debug("capture: {}", event.ToString());
  std::lock_guard<std::mutex> lock(mutex_);
  CaptureCounts& counts = counts_[event.node];
  switch (event.kind) {
    case CaptureEventKind::kCapture: ++counts.captures; break;
    case CaptureEventKind::kCaptureFailed: ++counts.failed_captures; break;
    case CaptureEventKind::kReplay:
      ++(event.region.empty() ? counts.replays : counts.region_replays);
      break;
    default: break;
  }
  if (max_events_ != 0 && events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

std::vector<CaptureEvent> CaptureLog::Events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

size_t CaptureLog::Count(CaptureEventKind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<size_t>(std::count_if(events_.begin(), events_.end(),
                                           [&](const CaptureEvent& e) { return e.kind == kind; }));
}

size_t CaptureLog::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

void CaptureLog::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  counts_.clear();
  dropped_ = 0;
}

std::map<std::string, CaptureCounts> CaptureLog::CountsByNode() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

}  // namespace mstar
