// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Status objects. When memory runs out, status_new hands out one preallocated status whose
// release does nothing, so an error can always be reported.
#include <new>

#include "host/host_objects.h"
#include "host/services.h"

namespace mstar {
namespace {

mstar_status* OutOfMemoryStatus() {
  static mstar_status status{MSTAR_ERR_RESOURCE_EXHAUSTED,
                             "out of memory while reporting an error"};
  return &status;
}

uint32_t StatusCode(const mstar_status_t* status) {
  return status == nullptr ? MSTAR_OK : status->code;
}

const char* StatusMessage(const mstar_status_t* status) {
  return status == nullptr ? "" : status->message.c_str();
}

}  // namespace

mstar_status_t* NewAbiStatus(uint32_t code, const char* message) {
  try {
    return new mstar_status{code, message == nullptr ? std::string() : std::string(message)};
  } catch (const std::bad_alloc&) {
    return OutOfMemoryStatus();
  }
}

void ReleaseAbiStatus(mstar_status_t* status) {
  if (status == nullptr || status == OutOfMemoryStatus()) return;
  delete status;
}

void InstallStatusServices(mstar_host_api_t& table) {
  table.status_new = &NewAbiStatus;
  table.status_code = &StatusCode;
  table.status_message = &StatusMessage;
  table.status_release = &ReleaseAbiStatus;
}

}  // namespace mstar
