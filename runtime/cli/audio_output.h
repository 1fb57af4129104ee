// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// How `mstar run` turns a model's "audio" outputs into WAV files: which outputs are audio and at
// what sample rate (the emit edges' `sample_rate`, or --audio-rate), where each request's file
// goes, and the writing itself.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "model/model_spec.h"

namespace mstar::cli {

// The rate used when neither the manifest nor --audio-rate gives one.
inline constexpr uint32_t kDefaultAudioRate = 24000;

// One audio output of a request as the client received it: mono samples in order.
struct AudioTrack {
  std::vector<float> samples;
  // Why chunks were left out from the first that could not be read as samples on ("" when none
  // was): the file holds the samples before it and is marked partial.
  std::string error;
};

// A request's audio, per output name.
using RequestAudio = std::map<std::string, AudioTrack>;

// The model's audio outputs and the sample rate each is written at.
class AudioOutputs {
 public:
  // rate_flag: --audio-rate, 0 when not given; it overrides every output's declared rate.
  AudioOutputs(const ModelSpec& model, uint32_t rate_flag);

  bool empty() const { return rates_.empty(); }
  bool has(const std::string& output) const { return rates_.count(output) != 0; }
  uint32_t rate(const std::string& output) const { return rates_.at(output); }
  // The outputs written at kDefaultAudioRate because nothing gave them a rate.
  const std::vector<std::string>& undeclared() const { return undeclared_; }

  // The WAV file for `output` of request `id` of `count`: the --audio path itself for one request
  // and one audio output; otherwise "-<id>" (several requests) and "-<output>" (several audio
  // outputs) go before the extension.
  std::string PathFor(const std::string& audio_flag, size_t id, size_t count,
                      const std::string& output) const;
  // The first file PathFor names (every file goes in the same directory); not when empty().
  std::string FirstPath(const std::string& audio_flag, size_t count) const {
    return PathFor(audio_flag, 1, count, rates_.begin()->first);
  }

 private:
  std::map<std::string, uint32_t> rates_;  // output name -> samples per second
  std::vector<std::string> undeclared_;
};

// Where a WAV file for path is written: path itself, or the file a symbolic link at path names;
// INVALID_ARGUMENT when that is not a regular file (a device, a FIFO), which the rename that
// finishes a WAV file would replace.
Result<std::string> WavTarget(const std::string& path);

// Checks, before any request runs, that the WAV file at path (AudioOutputs::FirstPath) can be
// created, so a typo in --audio does not throw away a whole run's audio at the end. Messages
// name the directory where the file goes, or path.
Status CheckAudioPath(const std::string& path);

// What one request left for the WAV files: its audio and whether it ended done (a failed or
// cancelled request's audio is written too, marked partial).
struct AudioOfRequest {
  const RequestAudio* audio;
  bool complete;
};

// Writes every request's audio; returns the files written (id, output, path, samples, seconds,
// rate, partial, and the track's error when it has one) for the summary, and appends what could
// not be written, and each track's error, to *errors.
nlohmann::json WriteAudioFiles(const std::string& audio_flag, const AudioOutputs& outputs,
                               const std::vector<AudioOfRequest>& requests,
                               std::vector<std::string>* errors);

}  // namespace mstar::cli
