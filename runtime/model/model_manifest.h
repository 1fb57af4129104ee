// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Reading a model manifest: TOML syntax, the schema (every key known and typed), --set overrides,
// then the cross-checks of model_validate.h. Every problem is a diagnostic naming the file, line
// and key; all of them are reported, not just the first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.h"
#include "model/model_spec.h"

namespace mstar {

class PluginRegistry;

struct ModelParse {
  std::optional<ModelSpec> model;  // set when there are no diagnostics
  Diagnostics diagnostics;
};

// overrides are "dotted.key=value" strings (--set); a value parses as a TOML value (number,
// boolean, array, quoted string) and otherwise as a bare string. Segments may be double-quoted to
// hold dots: walks.decode.inputs."lm.tokens"=persisted.x. When registry is given, every plugin the
// manifest names must be loaded and of the right kind. A node that names no `device` runs on
// default_device (the runtime config's [device]), and a resource that names none goes with its
// nodes.
ModelParse ParseModelManifestFile(const std::string& path,
                                  const std::vector<std::string>& overrides = {},
                                  const PluginRegistry* registry = nullptr,
                                  DLDevice default_device = DLDevice{kDLCPU, 0});
ModelParse ParseModelManifestText(std::string_view text, const std::string& path,
                                  const std::vector<std::string>& overrides = {},
                                  const PluginRegistry* registry = nullptr,
                                  DLDevice default_device = DLDevice{kDLCPU, 0});

}  // namespace mstar
