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

// What the model controller named by [model] controller decides instead of the manifest: the
// first walk of a partition, the next walk after one. Without its plugin at hand, both are
// assumed (the checks that depend on the manifest's order are skipped).
struct ControllerChoices {
  bool first_walk = true;
  bool next_walk = true;
};

// Adds a diagnostic per problem; also fills the derived PartitionSpec::stream.
void ValidateModel(ModelSpec& model, Diagnostics* diagnostics, ControllerChoices choices = {});

// The choices of model.controller's factory in registry (the defaults when it is not there).
ControllerChoices ControllerChoicesOf(const ModelSpec& model, const PluginRegistry& registry);

// Every plugin the manifest names is loaded and provides the right kind.
void CheckModelPlugins(const ModelSpec& model, const PluginRegistry& registry,
                       Diagnostics* diagnostics);

}  // namespace mstar
