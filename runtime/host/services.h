// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Each Install*Services fills one group of slots of the host table with the runtime's
// implementations. host_api.cc calls them all.
#pragma once

#include <new>

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
// Whether status is a live status of status_new (checked without reading it).
bool IsLiveAbiStatus(const mstar_status_t* status);
// The memory_copy slot (ordered on stream as it promises, host-to-host copies included), for
// services that move bytes.
mstar_status_t* CopyMemory(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                           uint64_t size, mstar_stream_t* stream);

// Waits for the work given to stream when it is a device stream (NULL and host streams have
// none), so that the calling thread may then touch host memory that work reads or writes.
Status WaitForStream(mstar_stream_t* stream);

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
