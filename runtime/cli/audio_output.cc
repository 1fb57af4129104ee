// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "cli/audio_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/wav_file.h"

namespace mstar::cli {

AudioOutputs::AudioOutputs(const ModelSpec& model, uint32_t rate_flag) {
  for (const auto& [name, walk] : model.walks) {
    for (const EdgeSpec& edge : walk.edges) {
      if (edge.kind != EdgeSpec::Kind::kEmit || edge.modality != "audio") continue;
      // Validation made every emit edge of one output agree on its rate.
      rates_[edge.name] = rate_flag != 0 ? rate_flag : edge.sample_rate;
    }
  }
  for (auto& [output, rate] : rates_) {
    if (rate != 0) continue;
    rate = kDefaultAudioRate;
    undeclared_.push_back(output);
  }
}

std::string AudioOutputs::PathFor(const std::string& audio_flag, size_t id, size_t count,
                                  const std::string& output) const {
  std::string suffix;
  // append, not "-" + ...: GCC 12 at -O3 warns falsely (-Wrestrict) on a literal + a temporary.
  if (count > 1) suffix.append("-").append(std::to_string(id));
  if (rates_.size() > 1) suffix.append("-").append(output);
  size_t dot = audio_flag.rfind('.');
  size_t slash = audio_flag.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return audio_flag + suffix;
  return audio_flag.substr(0, dot) + suffix + audio_flag.substr(dot);
}

Result<std::string> WavTarget(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A link (or a chain of them, even to a file not there yet) names the file to write, so the
  // file is written and the link stays.
  fs::path target = path;
  for (int hops = 0; fs::is_symlink(target, ec); ++hops) {
    fs::path next = fs::read_symlink(target, ec);
    if (ec || hops == 40) {
      return InvalidArgument("--audio: cannot follow the link " + target.string() + ": " +
                             (ec ? ec.message() : std::string("too many links")));
    }
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  const fs::file_status status = fs::status(target, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    return InvalidArgument("--audio: " + target.string() +
                           " is not a regular file (a WAV file is written beside it and renamed "
                           "over it)");
  }
  return target.string();
}

Status CheckAudioPath(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidArgument("--audio: " + path + " is a directory");
  Result<std::string> target = WavTarget(path);
  if (!target.ok()) return target.status();
  fs::path dir = fs::path(*target).parent_path();  // a link's file is written beside its target
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    return InvalidArgument("--audio: " + dir.string() + " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) {
    return InvalidArgument("--audio: cannot create files in " + dir.string() + ": " +
                           std::strerror(errno));
  }
  return Status::Ok();
}

nlohmann::json WriteAudioFiles(const std::string& audio_flag, const AudioOutputs& outputs,
                               const std::vector<AudioOfRequest>& requests,
                               std::vector<std::string>* errors) {
  nlohmann::json files = nlohmann::json::array();
  for (size_t i = 0; i < requests.size(); ++i) {
    for (const auto& [output, track] : *requests[i].audio) {
      if (!outputs.has(output)) continue;
      if (!track.error.empty()) {
        std::string error = "request " + std::to_string(i + 1);
        error.append(", audio output '").append(output).append("': ").append(track.error);
        std::cerr << "mstar run: " << error << "\n";
        errors->push_back(std::move(error));
      }
      const std::vector<float>& samples = track.samples;
      if (samples.empty()) continue;
      const std::string path = outputs.PathFor(audio_flag, i + 1, requests.size(), output);
      const uint32_t rate = outputs.rate(output);
      Result<std::string> target = WavTarget(path);
      Status written = target.ok() ? WriteWav(*target, samples, rate) : target.status();
      if (!written.ok()) {
        std::cerr << "mstar run: " << written.message() << "\n";
        errors->push_back(written.message());
        continue;
      }
      files.push_back({{"id", i + 1},
                       {"output", output},
                       {"path", path},
                       {"samples", samples.size()},
                       {"seconds", static_cast<double>(samples.size()) / rate},
                       {"sample_rate", rate},
                       {"partial", !requests[i].complete || !track.error.empty()}});
      if (!track.error.empty()) files.back()["error"] = track.error;
    }
  }
  return files;
}

}  // namespace mstar::cli
