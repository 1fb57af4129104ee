// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "host/host_api.h"

#include <cstring>

#include "host/services.h"

namespace mstar {
namespace {

mstar_host_api_t BuildTable(uint32_t host_minor, mstar_host_context_t* context) {
  mstar_host_api_t table;
  std::memset(&table, 0, sizeof(table));
  table.struct_size = sizeof(mstar_host_api_t);
  table.struct_version = host_minor;
  table.context = context;
  InstallStatusServices(table);
  InstallLogServices(table);
  InstallConfigServices(table);
  InstallMemoryServices(table);
  InstallTensorServices(table);
  InstallStreamServices(table);
  InstallMetricServices(table);
  InstallTierServices(table);
  InstallCommServices(table);
  InstallRegionServices(table);
  return table;
}

}  // namespace

HostApi::HostApi(std::string plugin_name, uint32_t host_minor) {
  library_context_.plugin = plugin_name;
  library_context_.label = std::move(plugin_name);
  table_ = BuildTable(host_minor, &library_context_);
}

std::unique_ptr<mstar_host_context> HostApi::NewInstanceContext(
    const std::string& instance_name) const {
  auto context = std::make_unique<mstar_host_context>();
  context->plugin = library_context_.plugin;
  context->instance = instance_name;
  context->label = library_context_.plugin + "/" + instance_name;
  return context;
}

Status TakeStatus(mstar_status_t* status) {
  if (status == nullptr) return Status::Ok();
  if (!IsLiveAbiStatus(status)) {
    return Internal(
        "a plugin returned a status that status_new did not make, or that was released already");
  }
  Status out(CodeFromAbi(status->code), status->message);
  if (out.ok()) out = Internal("a plugin returned a status object with code OK");
  ReleaseAbiStatus(status);
  return out;
}

mstar_status_t* MakeAbiStatus(const Status& status) {
  return NewAbiStatus(static_cast<uint32_t>(status.code()), status.message().c_str());
}

}  // namespace mstar
