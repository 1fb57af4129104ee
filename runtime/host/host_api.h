// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// HostApi: the services table the runtime hands one plugin library (mstar/host.h), with the
// library's context, plus the contexts of that library's instances.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "host/host_objects.h"
#include "mstar/host.h"

namespace mstar {

class HostApi {
 public:
  // host_minor is the minor the table claims (tests claim older minors to check negotiation).
  explicit HostApi(std::string plugin_name, uint32_t host_minor = MSTAR_ABI_MINOR);

  HostApi(const HostApi&) = delete;
  HostApi& operator=(const HostApi&) = delete;

  // Valid for the HostApi's life; the library keeps it until it is unloaded.
  const mstar_host_api_t* table() const { return &table_; }
  mstar_host_context_t* library_context() { return &library_context_; }
  const std::string& plugin_name() const { return library_context_.plugin; }

  // A context for one instance of this library (logs and memory attributed to it).
  std::unique_ptr<mstar_host_context> NewInstanceContext(const std::string& instance_name) const;

 private:
  mstar_host_context library_context_;
  mstar_host_api_t table_;
};

// Converts a plugin's status (transferred) into a Status and releases it.
[[gnu::cold]] Status TakeStatus(mstar_status_t* status);
// A new ABI status object carrying status (which must not be OK).
mstar_status_t* MakeAbiStatus(const Status& status);

}  // namespace mstar
