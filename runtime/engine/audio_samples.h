// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The samples of an "audio" output chunk as a client reads them: mono floats, nominally in
// [-1, 1]. The engine's default encoding sends an audio tensor's elements as they are, with
// their element type on the chunk (OutputChunk::element_type); a model controller that encodes
// audio itself must send float32 samples in host byte order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <dlpack/dlpack.h>

#include "core/status.h"

namespace mstar {

// Appends the samples of size bytes of element_type at data to *samples. Floats (16, 32 and 64
// bits, bfloat16) are taken as they are; signed integers (8 to 64 bits) are PCM at their
// width's full scale (v / 2^(bits-1)); uint8 is 8-bit PCM, offset by 128. element_type.bits == 0
// means float32 (a controller's encoding). INVALID_ARGUMENT, nothing appended, for any other type
// (vectors of lanes included) or a size that is no whole number of samples.
Status AppendAudioSamples(DLDataType element_type, const uint8_t* data, size_t size,
                          std::vector<float>* samples);

}  // namespace mstar
