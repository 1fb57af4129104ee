// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "cli/run_summary.h"

#include <algorithm>
#include <string>

#include "core/metrics.h"
#include "device/device.h"
#include "engine/audio_samples.h"
#include "host/memory_ledger.h"

namespace mstar::cli {
namespace {

const char* EndName(RequestEnd end) {
  switch (end) {
    case RequestEnd::kDone: return "done";
    case RequestEnd::kFailed: return "failed";
    case RequestEnd::kCancelled: return "cancelled";
  }
  return "unknown";
}

bool CountsTokens(const OutputChunk& chunk) {
  return chunk.modality == "text" || chunk.modality == "tokens";
}

void CollectAudio(const OutputChunk& chunk, AudioTrack* track) {
  if (!track->error.empty()) return;  // after a chunk it could not read, the rest would be a gap
  Status read = AppendAudioSamples(chunk.element_type, chunk.bytes.data(), chunk.bytes.size(),
                                   &track->samples);
  if (read.ok()) return;
  track->error = "chunk " + std::to_string(chunk.sequence);
  track->error.append(": ").append(read.message()).append("; the chunks from it on are left out");
}

nlohmann::json OutputsJson(const std::vector<Collected>& collected) {
  nlohmann::json outputs = nlohmann::json::array();
  for (size_t i = 0; i < collected.size(); ++i) {
    const Collected& c = collected[i];
    nlohmann::json out = {
        {"id", i + 1}, {"end", EndName(c.result.end)}, {"tokens", c.result.tokens}};
    if (!c.text.empty()) out["text"] = c.text;
    if (!c.tokens.empty()) out["token_ids"] = c.tokens;  // text may not be valid UTF-8
    if (!c.result.error.empty()) out["error"] = c.result.error;
    if (!c.bytes_by_output.empty()) out["output_bytes"] = c.bytes_by_output;
    outputs.push_back(out);
  }
  return outputs;
}

// Per device whose freed blocks are cached (CUDA devices): how often a block came back.
nlohmann::json BlockCachesJson() {
  nlohmann::json block_caches = nlohmann::json::array();
  for (const auto& [device, cache] : MemoryLedger::Global().AllCacheStats()) {
    block_caches.push_back({{"device", DeviceName(device)},
                            {"reused", cache.reused},
                            {"allocated", cache.allocated},
                            {"fences", cache.fences},
                            {"given_back", cache.given_back},
                            {"cached_bytes", cache.cached_bytes}});
  }
  return block_caches;
}

// The requests' lines: each one's end, text or error.
void PrintRequests(const nlohmann::json& outputs, bool quiet, std::ostream& out,
                   std::ostream& err) {
  for (const nlohmann::json& output : outputs) {
    if (quiet && !output.contains("error")) continue;  // quiet hides outputs, not failures
    std::ostream& to = quiet ? err : out;
    to << "request " << output["id"] << " (" << output["end"].get<std::string>() << ")";
    if (!quiet && output.contains("text")) to << ": " << output["text"].get<std::string>();
    if (output.contains("error")) to << ": " << output["error"].get<std::string>();
    to << "\n";
  }
}

void PrintSingleRequest(const nlohmann::json& output, bool quiet, std::ostream& out,
                        std::ostream& err) {
  if (output["end"] != "done") {
    err << "mstar run: request " << output["end"].get<std::string>() << ": "
        << output.value("error", "") << "\n";
  }
  if (quiet || !output.contains("token_ids")) return;
  out << "tokens (" << output["token_ids"].size() << "):";
  for (const nlohmann::json& token : output["token_ids"]) out << " " << token.get<int64_t>();
  out << "\n";
}

void PrintTotals(const nlohmann::json& summary, std::ostream& out) {
  const uint64_t cancelled = summary["cancelled"].get<uint64_t>();
  const uint64_t tokens = summary["tokens"].get<uint64_t>();
  const double elapsed = summary["elapsed_s"].get<double>();
  out << "\n"
      << summary["completed"].get<uint64_t>() << "/" << summary["requests"].get<uint64_t>()
      << " requests completed, " << summary["failed"].get<uint64_t>() << " failed"
      << (cancelled > 0 ? ", " + std::to_string(cancelled) + " cancelled" : "") << "; " << tokens
      << " tokens in " << elapsed << " s ("
      << static_cast<int64_t>(static_cast<double>(tokens) / std::max(elapsed, 1e-9))
      << " tokens/s); " << summary["steps"].get<uint64_t>() << " steps, mean batch "
      << summary["mean_batch"].get<double>() << ", overhead "
      << summary["overhead_us_per_step"].get<double>() << " us/step\n";
}

void PrintCapturesAndCaches(const nlohmann::json& summary, std::ostream& out) {
  for (const auto& [name, node] : summary["nodes"].items()) {
    if (node["captured_graphs"].get<uint64_t>() == 0 &&
        node["failed_captures"].get<uint64_t>() == 0)
      continue;
    out << "capture: node " << name << ": " << node["captured_graphs"].get<uint64_t>()
        << " graphs captured, " << node["replayed_steps"].get<uint64_t>() << " steps replayed";
    if (node["region_replays"].get<uint64_t>() > 0)
      out << ", " << node["region_replays"].get<uint64_t>() << " region replays";
    out << "\n";
  }
  for (const nlohmann::json& cache : summary["device_block_caches"]) {
    const uint64_t reused = cache["reused"].get<uint64_t>();
    out << "device memory: " << cache["device"].get<std::string>() << ": " << reused << " of "
        << reused + cache["allocated"].get<uint64_t>() << " allocations served by freed blocks\n";
  }
}

void PrintAudioFiles(const nlohmann::json& audio_files, std::ostream& out) {
  for (const nlohmann::json& file : audio_files) {
    out << "wrote " << file["path"].get<std::string>() << " (" << file["seconds"].get<double>()
        << " s of audio at " << file["sample_rate"].get<uint32_t>() << " Hz"
        << (!file["partial"].get<bool>() ? ""
            : file.contains("error")     ? "; partial: chunks could not be read as samples"
                                         : "; partial: the request did not complete")
        << ")\n";
  }
}

}  // namespace

void CollectChunk(const OutputChunk& chunk, Collected* collected) {
  collected->bytes_by_output[chunk.name] += chunk.bytes.size();
  if (chunk.modality == "text") collected->text.append(chunk.bytes.begin(), chunk.bytes.end());
  if (chunk.modality == "audio") CollectAudio(chunk, &collected->audio[chunk.name]);
  if (CountsTokens(chunk)) {
    collected->tokens.insert(collected->tokens.end(), chunk.values.begin(), chunk.values.end());
  }
}

nlohmann::json RunSummaryJson(const std::vector<Collected>& collected,
                              const RunMeasures& measures) {
  uint64_t completed = 0, failed = 0, cancelled = 0, total_tokens = 0;
  for (const Collected& c : collected) {
    completed += c.result.end == RequestEnd::kDone ? 1 : 0;
    cancelled += c.result.end == RequestEnd::kCancelled ? 1 : 0;
    failed += c.result.end != RequestEnd::kDone && c.result.end != RequestEnd::kCancelled ? 1 : 0;
    total_tokens += c.result.tokens;
  }
  // Requests per batch over the batches that ran (each node's, together), and per node.
  NodeBatchStats all;
  nlohmann::json nodes = nlohmann::json::object();
  for (const auto& [name, node] : measures.stats.nodes) {
    all.batches += node.batches;
    all.request_steps += node.request_steps;
    auto counts = measures.captures.find(name);
    const CaptureCounts c = counts != measures.captures.end() ? counts->second : CaptureCounts{};
    nodes[name] = {{"steps", node.batches},         {"request_steps", node.request_steps},
                   {"mean_batch", node.mean()},     {"largest_batch", node.largest},
                   {"captured_graphs", c.captures}, {"failed_captures", c.failed_captures},
                   {"replayed_steps", c.replays},   {"region_replays", c.region_replays}};
  }
  const double elapsed = measures.elapsed_s;
  const double overhead_us =
      all.batches > 0
          ? (elapsed * 1e9 - static_cast<double>(measures.timings.forward_ns)) / all.batches / 1e3
          : 0;
  const ConductorStats& stats = measures.stats;
  return {{"model", measures.model},
          {"requests", collected.size()},
          {"interrupted", measures.interrupted},
          {"completed", completed},
          {"failed", failed},
          {"cancelled", cancelled},
          {"tokens", total_tokens},
          {"steps", all.batches},
          {"request_steps", all.request_steps},
          {"wasted_steps", stats.wasted_steps},
          {"cohort_steps", stats.cohort_batches},
          {"cohort_handoffs", stats.cohort_handoffs},
          {"scheduler_wakes", stats.scheduler_wakes},
          {"evictions", stats.evictions},
          {"capacity_waits", stats.capacity_waits},
          {"recomputes", stats.recomputes},
          {"elapsed_s", elapsed},
          {"load_s", measures.load_s},
          {"tokens_per_s", static_cast<double>(total_tokens) / std::max(elapsed, 1e-9)},
          {"mean_batch", all.mean()},
          {"nodes", nodes},
          {"overhead_us_per_step", overhead_us},
          {"device_block_caches", BlockCachesJson()},
          {"counters", Metrics::Global().Counters()},
          {"audio_files", measures.audio_files},
          {"errors", measures.errors},
          {"outputs", OutputsJson(collected)}};
}

void PrintRunSummary(const nlohmann::json& summary, bool quiet, std::ostream& out,
                     std::ostream& err) {
  const nlohmann::json& outputs = summary["outputs"];
  if (outputs.size() > 1) PrintRequests(outputs, quiet, out, err);
  if (outputs.size() == 1) PrintSingleRequest(outputs[0], quiet, out, err);
  PrintTotals(summary, out);
  PrintCapturesAndCaches(summary, out);
  PrintAudioFiles(summary["audio_files"], out);
}

}  // namespace mstar::cli
