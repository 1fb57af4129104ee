/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/abi.h: versions, conventions and the small types every ABI surface shares.
 *
 * The M* plugin ABI is plain C11. These rules hold for every header under mstar/ and are written
 * once, here:
 *
 *  Versions   MSTAR_ABI_MAJOR must match exactly between host and plugin; a different major is
 *             refused before any other field is read. MSTAR_ABI_MINOR grows when slots or fields
 *             are appended; host and plugin settle on min(host minor, plugin minor) at load time
 *             (see mstar/plugin.h) and the plugin states the lowest host minor it can run on.
 *
 *  Structs    Every struct that crosses the boundary begins with
 *                 uint32_t struct_size;     sizeof() of the struct as the writer compiled it
 *                 uint32_t struct_version;  the ABI minor the writer filled it for
 *             A reader never touches a field that lies beyond struct_size, nor a field added in a
 *             minor newer than struct_version. Function tables are append-only: a new slot goes
 *             at the end with a "since 1.N" note, and the last slot of every released minor is
 *             pinned by a static assert on its offset, so an insertion anywhere fails to compile.
 *             When a hook fills a struct the host provides (an "out" struct), the host sets
 *             struct_size and struct_version first and the plugin writes only fields that lie
 *             within that struct_size, leaving those two fields as the host set them.
 *
 *  Enums      Enumerations travel as uint32_t fields, never as C enum types, so that a value
 *             added in a later minor cannot change a struct's layout. A reader treats an unknown
 *             value as "unsupported", never as undefined behaviour.
 *
 *  Errors     A fallible function returns mstar_status_t*: NULL is success, anything else is an
 *             error object created by the host's status_new (mstar/host.h) and owned by the
 *             receiver, who releases it with status_release. No C++ exception ever crosses the
 *             boundary. When a function fails, its out-parameters are left exactly as they were.
 *
 *  Ownership  Each pointer parameter is one of three kinds, named in its documentation:
 *               borrowed     valid for the duration of the call (or until the named parent object
 *                            is released); the receiver neither frees nor keeps it;
 *               transferred  the receiver now owns it and must release it with the paired
 *                            *_release function (or the tensor's deleter) exactly once;
 *               provided     the caller supplies an object (map, byte buffer) the callee fills.
 *             Nothing allocated on one side is freed with free()/delete on the other.
 *
 *  Pointers   Pointer parameters are non-NULL unless documented "may be NULL". Strings are
 *             NUL-terminated UTF-8.
 *
 *  Booleans   Booleans are uint32_t: 0 is false, any other value is true.
 *
 *  Threads    The host never calls one plugin object (a submodule, resource, tier or model
 *             instance) from two threads at once, but may call different objects concurrently and
 *             may call the same object from different threads over time. Host services
 *             (mstar/host.h) are thread-safe unless their documentation says otherwise.
 */
#ifndef MSTAR_ABI_H_
#define MSTAR_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

/* The ABI major: a plugin built for another major is refused. */
#define MSTAR_ABI_MAJOR 1u
/* The newest ABI minor these headers describe. Minors are append-only within a major. */
#define MSTAR_ABI_MINOR 4u

/* The one symbol a plugin library exports (see mstar/plugin.h). */
#define MSTAR_PLUGIN_ENTRY_SYMBOL "mstar_plugin_entry"

#if defined(__cplusplus)
#define MSTAR_EXTERN_C_BEGIN extern "C" {
#define MSTAR_EXTERN_C_END }
#define MSTAR_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define MSTAR_EXTERN_C_BEGIN
#define MSTAR_EXTERN_C_END
#define MSTAR_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#if defined(_WIN32)
#define MSTAR_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MSTAR_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Offset of function-pointer slot `index` in a table whose header is the two uint32_t fields. */
#define MSTAR_SLOT_OFFSET(index) (8u + (index) * sizeof(void*))

/* Pins `member` of table `type` at slot `index`; used on the last slot of every released minor. */
#define MSTAR_PIN_SLOT(type, member, index)                               \
  MSTAR_STATIC_ASSERT(offsetof(type, member) == MSTAR_SLOT_OFFSET(index), \
                      #type "." #member " moved: tables are append-only")

MSTAR_EXTERN_C_BEGIN

/* ---- Opaque host objects. Each is created and destroyed only by the host. ---------------- */

/* An error: a code and a message (mstar/status.h). */
typedef struct mstar_status mstar_status_t;
/* A read-only view of one node of a TOML document (mstar/host.h, config services). */
typedef struct mstar_config mstar_config_t;
/* A device stream: ordered work on one device. On CPU builds work runs inline (mstar/host.h). */
typedef struct mstar_stream mstar_stream_t;
/* A marker in a stream that other streams or the host can wait on. */
typedef struct mstar_event mstar_event_t;
/* An ordered map from edge name to a list of tensors (NameToTensorList in the Engine API). */
typedef struct mstar_tensor_map mstar_tensor_map_t;
/* A growable byte buffer the host provides for a plugin to fill (published state, deltas). */
typedef struct mstar_bytes mstar_bytes_t;
/* A tier instance as a resource sees it; calls go through the host (mstar/host.h, tiers). */
typedef struct mstar_tier_handle mstar_tier_handle_t;
/* A communicator over the ranks of one parallel group (mstar/host.h, communicator services). */
typedef struct mstar_comm mstar_comm_t;
/* Identifies the caller of a host service: a plugin library or one of its instances. Host
 * services use it to attribute log lines, memory and counters. */
typedef struct mstar_host_context mstar_host_context_t;

/* A request's identity, unique within one engine for the request's lifetime. */
typedef uint64_t mstar_request_id_t;

/* Plugin kinds (mstar_factory_t.kind). */
#define MSTAR_KIND_SUBMODULE 1u
#define MSTAR_KIND_RESOURCE 2u
#define MSTAR_KIND_TIER 3u
#define MSTAR_KIND_MODEL 4u

MSTAR_EXTERN_C_END

#endif /* MSTAR_ABI_H_ */
