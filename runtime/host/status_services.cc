// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Status objects. When memory runs out, status_new hands out one preallocated status whose
// release does nothing, so an error can always be reported.
#include <cstdio>
#include <mutex>
#include <new>
#include <unordered_set>

#include "core/logging.h"
#include "host/host_objects.h"
#include "host/services.h"

namespace mstar {
namespace {

mstar_status* OutOfMemoryStatus() {
  static mstar_status status{MSTAR_ERR_RESOURCE_EXHAUSTED,
                             "out of memory while reporting an error"};
  return &status;
}

// The statuses made and not yet released. Statuses report errors, so this is off the steps' path.
struct LiveStatuses {
  std::mutex mutex;
  std::unordered_set<const mstar_status*> live;
};

LiveStatuses& Live() {
  static auto* live = new LiveStatuses;  // never destroyed: statuses may outlive static teardown
  return *live;
}

uint32_t StatusCode(const mstar_status_t* status) {
  return status == nullptr ? MSTAR_OK : status->code;
}

const char* StatusMessage(const mstar_status_t* status) {
  return status == nullptr ? "" : status->message.c_str();
}

}  // namespace

mstar_status_t* NewAbiStatus(uint32_t code, const char* message) {
  mstar_status* status = nullptr;
  try {
    status = new mstar_status{code, message == nullptr ? std::string() : std::string(message)};
    std::lock_guard<std::mutex> lock(Live().mutex);
    Live().live.insert(status);
    return status;
  } catch (const std::bad_alloc&) {
    delete status;
    return OutOfMemoryStatus();
  }
}

mstar_status_t* BadAllocStatus(const char* service, const std::bad_alloc& error) noexcept {
  char message[160];
  std::snprintf(message, sizeof(message), "%s: %s", service, error.what());
  return NewAbiStatus(MSTAR_ERR_RESOURCE_EXHAUSTED, message);
}

bool IsLiveAbiStatus(const mstar_status_t* status) {
  if (status == OutOfMemoryStatus()) return true;
  std::lock_guard<std::mutex> lock(Live().mutex);
  return Live().live.count(status) != 0;
}

void ReleaseAbiStatus(mstar_status_t* status) {
  if (status == nullptr || status == OutOfMemoryStatus()) return;
  {
    std::lock_guard<std::mutex> lock(Live().mutex);
    if (Live().live.erase(status) == 0) {
      Log().error(
          "status_release: {} is not a status of status_new, or was released already; "
          "nothing is released",
          static_cast<const void*>(status));
      return;
    }
  }
  delete status;
}

void InstallStatusServices(mstar_host_api_t& table) {
  // Made now: made first when memory has run out, its message's allocation would throw.
  (void)OutOfMemoryStatus();
  table.status_new = &NewAbiStatus;
  table.status_code = &StatusCode;
  table.status_message = &StatusMessage;
  table.status_release = &ReleaseAbiStatus;
}

}  // namespace mstar
