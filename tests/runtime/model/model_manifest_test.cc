// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "model/model_manifest.h"

#include <gtest/gtest.h>

namespace mstar {
namespace {

TEST(ModelManifest, ShippedEchoManifestIsValid) {
  ModelParse parse = ParseModelManifestFile(std::string(MSTAR_SOURCE_DIR) + "/manifests/models/echo.toml");
  ASSERT_TRUE(parse.model.has_value()) << JoinDiagnostics(parse.diagnostics);
  EXPECT_EQ(parse.model->name, "echo");
}

}  // namespace
}  // namespace mstar
