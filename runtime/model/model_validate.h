// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The cross-checks of a model manifest that the schema cannot express: every name refers to
// something that exists, every node input is produced before the node runs, dependencies form no
// cycle outside a loop, every walk is reachable, transitions go to known walks, and every stream
// (with its chunk policy) is fed by a streaming edge.
#pragma once

#include "core/diagnostic.h"
#include "model/model_spec.h"

namespace mstar {

class PluginRegistry;

// Adds a diagnostic per problem; also fills the derived PartitionSpec::stream.
void ValidateModel(ModelSpec& model, Diagnostics* diagnostics);

// Every plugin the manifest names is loaded and provides the right kind.
void CheckModelPlugins(const ModelSpec& model, const PluginRegistry& registry,
                       Diagnostics* diagnostics);

}  // namespace mstar
