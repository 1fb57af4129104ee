// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Each Install*Services fills one group of slots of the host table with the runtime's
// implementations. host_api.cc calls them all.
#pragma once

#include <new>
#include <string>

#include "core/status.h"
#include "mstar/host.h"

namespace mstar {

// The status_new / status_release slots, for runtime code that makes or takes ABI statuses.
// Every status status_new made is live until its release: a release of another pointer (a
// plugin's own object, a status released already) is refused with an error and frees nothing.
mstar_status_t* NewAbiStatus(uint32_t code, const char* message);
void ReleaseAbiStatus(mstar_status_t* status);
// RESOURCE_EXHAUSTED "<service>: <error.what()>", made without allocating before status_new.
mstar_status_t* BadAllocStatus(const char* service, const std::bad_alloc& error) noexcept;
// Runs a service's work that calls C++ the host does not control (a tier's table, a region
// runner) and returns its status: an exception stops here, as an error status, instead of
// unwinding through the calling plugin's C frames. Out of memory is RESOURCE_EXHAUSTED
// "<name()>: <reason>"; any other exception INTERNAL "<name()> threw an exception through the
// ABI: <reason>". name, a callable returning a std::string, is called only then; without memory
// for the message, the status names service alone.
template <class Name, class Call>
mstar_status_t* ServiceBarrier(const char* service, Name&& name, Call&& call) noexcept;
// Whether status is a live status of status_new (checked without reading it).
bool IsLiveAbiStatus(const mstar_status_t* status);
// The memory_copy slot (ordered on stream as it promises, host-to-host copies included), for
// services that move bytes.
mstar_status_t* CopyMemory(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                           uint64_t size, mstar_stream_t* stream);

// Waits for the work given to stream when it is a device stream (NULL and host streams have
// none), so that the calling thread may then touch host memory that work reads or writes.
Status WaitForStream(mstar_stream_t* stream);

// ServiceBarrier's INTERNAL status; just "<service>" when there is no memory for the message.
template <class Name>
mstar_status_t* ThrewStatus(const char* service, Name& name, const char* reason) noexcept {
  try {
    std::string message = name();
    message.append(" threw ").append(reason != nullptr ? "an" : "a non-standard");
    message.append(" exception through the ABI");
    if (reason != nullptr) message.append(": ").append(reason);
    return NewAbiStatus(MSTAR_ERR_INTERNAL, message.c_str());
  } catch (...) {
    return NewAbiStatus(MSTAR_ERR_INTERNAL, service);
  }
}

// ServiceBarrier's RESOURCE_EXHAUSTED status, naming name() when there is memory for it.
template <class Name>
mstar_status_t* OutOfMemoryStatus(const char* service, Name& name,
                                  const std::bad_alloc& error) noexcept {
  try {
    std::string message = name();
    message.append(": ").append(error.what());
    return NewAbiStatus(MSTAR_ERR_RESOURCE_EXHAUSTED, message.c_str());
  } catch (...) {
    return BadAllocStatus(service, error);
  }
}

template <class Name, class Call>
mstar_status_t* ServiceBarrier(const char* service, Name&& name, Call&& call) noexcept {
  try {
    return call();
  } catch (const std::bad_alloc& error) {
    return OutOfMemoryStatus(service, name, error);
  } catch (const std::exception& error) {
    return ThrewStatus(service, name, error.what());
  } catch (...) {
    return ThrewStatus(service, name, nullptr);
  }
}

void InstallStatusServices(mstar_host_api_t& table);
void InstallLogServices(mstar_host_api_t& table);
void InstallConfigServices(mstar_host_api_t& table);
void InstallMemoryServices(mstar_host_api_t& table);
void InstallTensorServices(mstar_host_api_t& table);
void InstallStreamServices(mstar_host_api_t& table);
void InstallMetricServices(mstar_host_api_t& table);
void InstallTierServices(mstar_host_api_t& table);
void InstallCommServices(mstar_host_api_t& table);
void InstallRegionServices(mstar_host_api_t& table);

}  // namespace mstar
