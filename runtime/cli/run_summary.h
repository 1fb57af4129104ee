// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// What `mstar run` reports when its requests end: what the client side collected per request,
// the run's summary as one JSON object (--json prints it whole), and the text form of it.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/capture_log.h"
#include "cli/audio_output.h"
#include "engine/conductor.h"
#include "engine/engine.h"
#include "engine/output_stream.h"

namespace mstar::cli {

// What the client side collects per request.
struct Collected {
  std::string text;
  std::map<std::string, uint64_t> bytes_by_output;
  std::vector<int64_t> tokens;
  RequestAudio audio;  // the "audio" modality outputs
  RequestResult result;
};

// Adds one streamed chunk to what a request collected: text, token ids, byte counts and audio
// samples (an audio chunk that cannot be read as samples ends that track, with the reason).
void CollectChunk(const OutputChunk& chunk, Collected* collected);

// What the run measured beside the requests' own results.
struct RunMeasures {
  std::string model;
  bool interrupted = false;
  double elapsed_s = 0;
  double load_s = 0;
  ConductorStats stats;
  EngineTimings timings;
  std::map<std::string, CaptureCounts> captures;  // per node
  nlohmann::json audio_files = nlohmann::json::array();
  std::vector<std::string> errors;  // of the run itself (an audio file not written)
};

// The summary: totals ("completed", "failed", "cancelled", "tokens", ...), per-node batching and
// capture counts, device block caches, metrics counters and each request's "outputs".
nlohmann::json RunSummaryJson(const std::vector<Collected>& collected, const RunMeasures& measures);

// The summary as text. With several requests, each one's line goes to out (with quiet, only those
// that did not complete, to err); a single request that did not complete says why on err.
void PrintRunSummary(const nlohmann::json& summary, bool quiet, std::ostream& out,
                     std::ostream& err);

}  // namespace mstar::cli
