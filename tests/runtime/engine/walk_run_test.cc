// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
