// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// CaptureLog: what the capture machinery did, event by event (captures, replays, slot leases and
// releases, padding rows, pre-plans, stale re-plans, resets, eager fallbacks with their reason),
// for whole forwards and piecewise regions alike (an event of a region names it).
// Tests read it to check the sequence; operators see the same events at debug level.
//
// Thread-safe: the plan and exec threads append concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mstar/submodule.h"

namespace mstar {

enum class CaptureEventKind {
  kWarmupRun,      // the bucket's capture step ran eagerly before its first capture
  kCapture,        // a graph was captured for (node, walk, bucket, slot)
  kCaptureFailed,  // a capture failed (reason); an error at warmup unless fallback is allowed
  kReplay,         // a captured graph ran (rows real rows, padding padding rows)
  kLease,          // slot leased for a batch
  kRelease,        // slot free again: reason "fenced" (the work that used it has run: its
                   // replay, or an eager forward or plan that read it) or "unused"
  kPadding,        // padding rows filled for a replay (padding rows)
  kPrePlan,        // resources planned the batch ahead into the slot
  kStaleReplan,    // the pre-plan was stale at launch and was redone
  kReset,          // a pre-plan was dropped (its batch never dispatched); padding rows returned
  kEagerFallback,  // the batch ran eagerly (reason); logged once per (node, walk, shape, reason)
};

const char* CaptureEventKindName(CaptureEventKind kind);

struct CaptureEvent {
  CaptureEventKind kind = CaptureEventKind::kCapture;
  std::string node;
  std::string walk;
  std::string region;                   // a piecewise region's events; "" for whole forwards
  int config = -1;                      // index into the node's capture configs
  mstar_capture_bucket_t bucket{0, 0};  // kEagerFallback: the batch's own (size, tokens)
  int32_t slot = -1;     // engine-wide slot id (what resources see as the step's slot)
  uint32_t rows = 0;     // real rows of the batch
  uint32_t padding = 0;  // padding rows of the bucket
  std::string reason;    // kCaptureFailed, kEagerFallback, kStaleReplan

  std::string ToString() const;
};

// A kEagerFallback event: node's walk (and region, "" for a whole forward) ran eagerly at rows
// real rows (bucket: the batch's own size and tokens) for reason.
CaptureEvent FallbackEvent(std::string node, std::string walk, std::string region, uint32_t rows,
                           mstar_capture_bucket_t bucket, std::string reason);

// What the machinery did for one node over a log's whole life, past max_events too: how an
// operator (mstar run --json) or a device check tells that steps replayed.
struct CaptureCounts {
  uint64_t captures = 0;        // graphs captured (whole forwards and regions)
  uint64_t replays = 0;         // whole-forward replays: steps that ran a captured graph
  uint64_t region_replays = 0;  // piecewise regions replayed inside forwards
  uint64_t failed_captures = 0;

  CaptureCounts& operator+=(const CaptureCounts& other) {
    captures += other.captures;
    replays += other.replays;
    region_replays += other.region_replays;
    failed_captures += other.failed_captures;
    return *this;
  }
};

class CaptureLog {
 public:
  // max_events 0 keeps every event; otherwise events past the limit are counted, not kept.
  explicit CaptureLog(size_t max_events = 0) : max_events_(max_events) {}

  void Append(CaptureEvent event);
  std::vector<CaptureEvent> Events() const;
  size_t Count(CaptureEventKind kind) const;
  size_t dropped() const;
  // Counts per node of every event appended since the log was made or cleared.
  std::map<std::string, CaptureCounts> CountsByNode() const;
  void Clear();

 private:
  mutable std::mutex mutex_;
  size_t max_events_;
  size_t dropped_ = 0;
  std::vector<CaptureEvent> events_;
  std::map<std::string, CaptureCounts> counts_;
};

}  // namespace mstar
