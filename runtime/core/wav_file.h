// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WAV files for audio outputs: mono float samples in [-1, 1] written as 16-bit PCM RIFF/WAVE
// (samples outside the range are clipped). The file is written to a temporary name of its own
// (<path>.XXXXXX.partial; the file gets the mode open(2) would give it), synced and renamed, so
// a failed write, or a crash, never leaves a truncated file under the final name, and two
// writers of one path do not mix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace mstar {

// INVALID_ARGUMENT (nothing written) when the samples do not fit one WAV file's 32-bit sizes
// (WavDataBytes) or the rate is 0 or its bytes per second do not fit.
Status WriteWav(const std::string& path, const std::vector<float>& samples, uint32_t sample_rate);

// The data chunk's size for that many samples, or INVALID_ARGUMENT when the RIFF sizes (data
// plus the 36 header bytes after the RIFF size) would not fit 32 bits: at most 2147483629
// samples, about 24.8 hours at 24 kHz.
Result<uint32_t> WavDataBytes(uint64_t samples);

// The samples of a 16-bit PCM mono WAV file as floats (for tests and tools); an error naming the
// file when it is not one.
Result<std::vector<float>> ReadWav(const std::string& path, uint32_t* sample_rate);

}  // namespace mstar
