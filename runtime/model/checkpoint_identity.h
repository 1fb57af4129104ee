// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Checkpoint identity: bytes naming the weights a model runs under, computed without reading the
// weights themselves (engine-api.txt, checkpoint_identity). Plugins get them in
// mstar_create_args_t.checkpoint_identity: prefix-cache keys mix them in, and a persistent disk tier
// reuses its blocks across restarts only under the same identity.
//
// The identity is a SHA-256 digest over a canonical description of the checkpoint:
//   - with model.safetensors.index.json: "index" and the index file's bytes;
//   - without: the sorted (file name, size) list of the *.safetensors files;
// each followed by config.json's bytes when the directory has one. A path naming one .safetensors
// file describes that file's name and size (and its directory's config.json).
//
// Thread-safety: free functions over the file system; any thread may call them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_spec.h"

namespace mstar {

// The identity of the checkpoint at `path`, a directory or one .safetensors file. Fails with
// NOT_FOUND when the path does not exist or holds no safetensors, IO when a file cannot be read;
// the message names the path.
Result<std::vector<uint8_t>> CheckpointIdentity(const std::string& path);

// The identity of a model's weights: of [model].checkpoint when set, else of every node config's
// `weights` key (nodes in name order, each digest tagged with its node's name, combined by SHA-256).
// Relative paths resolve like the plugins resolve them: as given when that exists from the working
// directory, else under the manifest's directory. Empty when the model names no weights at all.
// Errors name the manifest key the path came from.
Result<std::vector<uint8_t>> ModelCheckpointIdentity(const ModelSpec& model);

}  // namespace mstar
