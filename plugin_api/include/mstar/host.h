/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/host.h: the services the host offers plugins, and the arguments it creates instances with.
 *
 * The host passes one mstar_host_api_t to the plugin's entry point. The table lives until the
 * library is unloaded, which the host does only after every object from the library is gone, so
 * a plugin may keep the pointer for its whole life. Plugins never link against the runtime: every
 * service they use is a slot of this table.
 *
 * Every service is thread-safe unless its documentation says otherwise. Services that take a
 * mstar_host_context_t* attribute the call (log lines, memory, counters) to that context: use the
 * library context (mstar_host_api_t.context) from the entry point and library-wide code, and the
 * instance context (mstar_create_args_t.context) from an instance.
 */
#ifndef MSTAR_HOST_H_
#define MSTAR_HOST_H_

#include "mstar/abi.h"
#include "mstar/status.h"
#include "mstar/tensor.h"
#include "mstar/tier.h"

MSTAR_EXTERN_C_BEGIN

/* Log levels (log, log_enabled). */
#define MSTAR_LOG_TRACE 0u
#define MSTAR_LOG_DEBUG 1u
#define MSTAR_LOG_INFO 2u
#define MSTAR_LOG_WARN 3u
#define MSTAR_LOG_ERROR 4u

/* Kinds of a config node (config_kind). Dates and times read as MSTAR_CONFIG_OTHER. */
#define MSTAR_CONFIG_NONE 0u
#define MSTAR_CONFIG_TABLE 1u
#define MSTAR_CONFIG_ARRAY 2u
#define MSTAR_CONFIG_STRING 3u
#define MSTAR_CONFIG_INT 4u
#define MSTAR_CONFIG_FLOAT 5u
#define MSTAR_CONFIG_BOOL 6u
#define MSTAR_CONFIG_OTHER 7u

/* Flags for memory_alloc. MSTAR_MEMORY_PINNED: page-locked host memory for fast device copies
 * (host devices only; ordinary memory on builds or machines without CUDA). */
#define MSTAR_MEMORY_PINNED 1u

/* Reductions for comm_all_reduce. */
#define MSTAR_REDUCE_SUM 0u
#define MSTAR_REDUCE_PROD 1u
#define MSTAR_REDUCE_MAX 2u
#define MSTAR_REDUCE_MIN 3u

typedef struct mstar_host_api {
  uint32_t struct_size;
  uint32_t struct_version; /* the host's ABI minor */

  /* slot 0. The library's context, for calls made outside any instance. */
  mstar_host_context_t* context;

  /* ---- Status objects (mstar/status.h) ------------------------------------------------------ */

  /* slot 1. A new status with code (an MSTAR_ERR_* value) and a copy of message (may be NULL).
   * Transferred to the caller. Never returns NULL: if memory runs out it returns a preallocated
   * status whose release is a no-op. */
  mstar_status_t* (*status_new)(uint32_t code, const char* message);
  /* slot 2. The code; MSTAR_OK for NULL. */
  uint32_t (*status_code)(const mstar_status_t* status);
  /* slot 3. The message, borrowed until the status is released; "" for NULL. */
  const char* (*status_message)(const mstar_status_t* status);
  /* slot 4. Frees a status (NULL is ignored). */
  void (*status_release)(mstar_status_t* status);

  /* ---- Logging into the runtime's logger ---------------------------------------------------- */

  /* slot 5. Whether a message at level would be written (to skip building it). */
  uint32_t (*log_enabled)(mstar_host_context_t* context, uint32_t level);
  /* slot 6. Writes message at level; the host adds the plugin and instance name. file (may be
   * NULL) and line locate the call site. */
  void (*log)(mstar_host_context_t* context, uint32_t level, const char* file, uint32_t line,
              const char* message);

  /* ---- Read-only configuration ---------------------------------------------------------------
   * A config node is a view of one TOML value: the plugin's table from a model manifest or
   * runtime config, with any --set overrides applied. Nodes are borrowed from the object they were
   * given with (the create args, a request) and valid as long as it. A NULL node reads as
   * MSTAR_CONFIG_NONE, so lookups chain without checks. Errors from the as_* getters name the
   * file, line and full key of the value. */

  /* slot 7. The node's kind (MSTAR_CONFIG_*). */
  uint32_t (*config_kind)(const mstar_config_t* node);
  /* slot 8. The value under a dotted path ("a.b.c") in a table; NULL when absent. */
  const mstar_config_t* (*config_get)(const mstar_config_t* table, const char* path);
  /* slot 9. Number of entries of a table or array; 0 for anything else. */
  uint32_t (*config_size)(const mstar_config_t* node);
  /* slot 10. The key of a table's index-th entry (keys sorted); NULL when out of range. */
  const char* (*config_key_at)(const mstar_config_t* table, uint32_t index);
  /* slot 11. The index-th value of an array or table; NULL when out of range. */
  const mstar_config_t* (*config_at)(const mstar_config_t* node, uint32_t index);
  /* slot 12. Reads a boolean. MSTAR_ERR_NOT_FOUND for NULL, INVALID_ARGUMENT for another kind. */
  mstar_status_t* (*config_as_bool)(const mstar_config_t* node, uint32_t* out_value);
  /* slot 13. Reads an integer (as above). */
  mstar_status_t* (*config_as_int)(const mstar_config_t* node, int64_t* out_value);
  /* slot 14. Reads a number; integers convert. */
  mstar_status_t* (*config_as_double)(const mstar_config_t* node, double* out_value);
  /* slot 15. Reads a string, borrowed as the node; *out_size excludes the terminating NUL. */
  mstar_status_t* (*config_as_string)(const mstar_config_t* node, const char** out_value,
                                      uint64_t* out_size);
  /* slot 16. "file:line:column: key" locating the node, for the plugin's own messages. Borrowed as
   * the node; "<none>" for NULL. */
  const char* (*config_where)(const mstar_config_t* node);

  /* ---- Accounted memory ----------------------------------------------------------------------
   * Memory a plugin takes through these calls counts against the runtime's memory budget for the
   * device and shows in its metrics. Device memory exists only on builds with that device. */

  /* slot 17. Allocates size bytes (alignment: a power of two, 0 for the default of 256) on
   * device. MSTAR_ERR_RESOURCE_EXHAUSTED when the budget or the device is full; UNSUPPORTED for a
   * device this build lacks; FAILED_PRECONDITION for device memory asked for while the calling
   * thread captures a graph for the runtime (allocate before, or from the graph's pool through
   * the capture hooks). *out_ptr is freed with memory_free. */
  mstar_status_t* (*memory_alloc)(mstar_host_context_t* context, DLDevice device, uint64_t size,
                                  uint64_t alignment, uint32_t flags, void** out_ptr);
  /* slot 18. Frees what memory_alloc returned (NULL is ignored). Device work enqueued before
   * the call may still use the block: the host reuses it only once the work enqueued on its
   * streams (every stream the host made on the device, and the default stream) has finished.
   * Work on a stream the plugin made itself must be finished, or ordered before one of the
   * host's streams, before the free. */
  void (*memory_free)(mstar_host_context_t* context, void* ptr);
  /* slot 19. Bytes this context holds on device, and the device's budget (0 when unlimited). */
  mstar_status_t* (*memory_usage)(mstar_host_context_t* context, DLDevice device,
                                  uint64_t* out_used, uint64_t* out_limit);
  /* slot 20. Copies size bytes between any two memories, ordered on stream (NULL: the copy is
   * complete when the call returns). Between two host memories the copy is made at once, after
   * the host has waited for what stream was given before (so not on a stream being captured
   * into a graph: that wait fails). */
  mstar_status_t* (*memory_copy)(void* dst, DLDevice dst_device, const void* src,
                                 DLDevice src_device, uint64_t size, mstar_stream_t* stream);

  /* ---- Tensors (mstar/tensor.h) ------------------------------------------------------------- */

  /* slot 21. A new contiguous tensor in accounted memory (contents undefined). Transferred. */
  mstar_status_t* (*tensor_alloc)(mstar_host_context_t* context, DLDevice device, DLDataType dtype,
                                  int32_t ndim, const int64_t* shape, mstar_tensor_t** out_tensor);
  /* slot 22. A new reference to tensor's storage, transferred: the storage lives until both the
   * original and every shared reference are deleted. tensor is borrowed and must be host-managed:
   * one read from a host map, or made by tensor_alloc or tensor_share. A tensor of any other
   * producer (the plugin's own, before it is appended to a map) is refused with
   * MSTAR_ERR_INVALID_ARGUMENT: the host cannot add references to storage it does not manage. */
  mstar_status_t* (*tensor_share)(const mstar_tensor_t* tensor, mstar_tensor_t** out_tensor);
  /* slot 23. Calls tensor's deleter if it has one (NULL is ignored). */
  void (*tensor_release)(mstar_tensor_t* tensor);

  /* ---- Tensor maps: edge name -> ordered list of tensors ------------------------------------
   * Maps are host objects. Names keep their first-insertion order. A map is not thread-safe: one
   * thread uses it at a time, as the hooks that receive maps guarantee. */

  /* slot 24. A new empty map, transferred (release with tensor_map_release). */
  mstar_status_t* (*tensor_map_new)(mstar_tensor_map_t** out_map);
  /* slot 25. Frees a map and releases its tensors (NULL is ignored). */
  void (*tensor_map_release)(mstar_tensor_map_t* map);
  /* slot 26. Appends tensor to name's list. tensor is transferred, even when the call fails. */
  mstar_status_t* (*tensor_map_append)(mstar_tensor_map_t* map, const char* name,
                                       mstar_tensor_t* tensor);
  /* slot 27. Number of distinct names. */
  uint32_t (*tensor_map_num_names)(const mstar_tensor_map_t* map);
  /* slot 28. The index-th name, borrowed until the map changes; NULL when out of range. */
  const char* (*tensor_map_name_at)(const mstar_tensor_map_t* map, uint32_t index);
  /* slot 29. Number of tensors under name (0 when absent). */
  uint32_t (*tensor_map_count)(const mstar_tensor_map_t* map, const char* name);
  /* slot 30. The index-th tensor under name, borrowed until the map changes; NULL when absent. */
  const mstar_tensor_t* (*tensor_map_get)(const mstar_tensor_map_t* map, const char* name,
                                          uint32_t index);
  /* slot 31. Removes name and releases its tensors; returns how many were removed. */
  uint32_t (*tensor_map_remove)(mstar_tensor_map_t* map, const char* name);

  /* ---- Byte buffers the host provides to be filled ------------------------------------------ */

  /* slot 32. Appends size bytes. RESOURCE_EXHAUSTED when memory runs out (nothing appended). */
  mstar_status_t* (*bytes_append)(mstar_bytes_t* bytes, const void* data, uint64_t size);
  /* slot 33. Current size. */
  uint64_t (*bytes_size)(const mstar_bytes_t* bytes);
  /* slot 34. Current contents, borrowed until the buffer changes; NULL when empty. */
  const void* (*bytes_data)(const mstar_bytes_t* bytes);

  /* ---- Streams and events --------------------------------------------------------------------
   * On CUDA builds a stream wraps a cudaStream_t and an event a cudaEvent_t. On CPU builds work is
   * executed inline by the thread that enqueues it, so a stream is always idle and an event is
   * complete once recorded. Streams and events given to a hook are borrowed for the call.
 * A NULL stream (a tier's submit may get one) is the host's inline stream: its device is the CPU,
 * its native handle NULL, it is always idle, waiting on it for an event blocks the caller until
 * the event completes, and an event recorded on it marks the event's device's default stream.
 * A NULL event is INVALID_ARGUMENT. */

  /* slot 35. A new stream on device (priority: 0 normal, negative higher). Transferred. */
  mstar_status_t* (*stream_create)(mstar_host_context_t* context, DLDevice device, int32_t priority,
                                   mstar_stream_t** out_stream);
  /* slot 36. Frees a stream created by stream_create, after its work completes. */
  void (*stream_release)(mstar_stream_t* stream);
  /* slot 37. The stream's device (kDLCPU for a host device's, pinned too: an inline stream). */
  DLDevice (*stream_device)(const mstar_stream_t* stream);
  /* slot 38. The native handle (cudaStream_t on CUDA), borrowed; NULL on CPU. */
  void* (*stream_native)(const mstar_stream_t* stream);
  /* slot 39. Blocks until all work on the stream has completed. */
  mstar_status_t* (*stream_synchronize)(mstar_stream_t* stream);
  /* slot 40. Makes later work on stream wait for event (without blocking the host thread). */
  mstar_status_t* (*stream_wait_event)(mstar_stream_t* stream, mstar_event_t* event);
  /* slot 41. A new event on device. Transferred. */
  mstar_status_t* (*event_create)(mstar_host_context_t* context, DLDevice device,
                                  mstar_event_t** out_event);
  /* slot 42. Frees an event. */
  void (*event_release)(mstar_event_t* event);
  /* slot 43. Records the event at the current end of stream. */
  mstar_status_t* (*event_record)(mstar_event_t* event, mstar_stream_t* stream);
  /* slot 44. Sets *out_done to 1 when the recorded work has completed. Never blocks. */
  mstar_status_t* (*event_query)(mstar_event_t* event, uint32_t* out_done);
  /* slot 45. Blocks until the recorded work has completed. */
  mstar_status_t* (*event_synchronize)(mstar_event_t* event);

  /* ---- Metrics. Names are dotted ASCII; the host prefixes the plugin and instance. ----------- */

  /* slot 46. Adds delta to a counted metric (a negative delta counts down, as for a count of
     things held); the sum saturates at the int64 range. */
  void (*counter_add)(mstar_host_context_t* context, const char* name, int64_t delta);
  /* slot 47. Sets a gauge. */
  void (*gauge_set)(mstar_host_context_t* context, const char* name, double value);

  /* ---- Tier services: a resource's calls to its tiers (mstar/tier.h) ------------------------
   * Each forwards to the tier instance's table after checking the batch and the slot versions;
   * semantics and ownership are those of the same-named tier slot. */

  /* slot 48. */
  mstar_status_t* (*tier_info)(mstar_tier_handle_t* tier, mstar_tier_info_t* out_info);
  /* slot 49. */
  mstar_status_t* (*tier_submit)(mstar_tier_handle_t* tier, mstar_tier_op_t* ops, uint32_t count,
                                 mstar_stream_t* stream, mstar_tier_batch_t** out_batch);
  /* slot 50. */
  mstar_status_t* (*tier_poll)(mstar_tier_handle_t* tier, mstar_tier_batch_t* batch,
                               uint32_t* out_done);
  /* slot 51. */
  mstar_status_t* (*tier_wait)(mstar_tier_handle_t* tier, mstar_tier_batch_t* batch,
                               uint64_t timeout_ns);
  /* slot 52. */
  void (*tier_release_batch)(mstar_tier_handle_t* tier, mstar_tier_batch_t* batch);

  /* ---- Communicator over the ranks of an instance's parallel group --------------------------
   * Backed by NCCL on CUDA builds; on a single rank every collective is a local copy. Tensors are
   * borrowed for the call and must be compact (mstar/tensor.h: they move as plain bytes; a strided
   * view is refused with MSTAR_ERR_INVALID_ARGUMENT); outputs (recv, buffer) must be writable
   * tensors of the right size. All ranks must issue the same collectives in the same order.
   * A collective the host refuses on one rank (a bad argument) still ends the round on the
   * in-process (thread) transport: every rank's call fails, naming that rank and why. Over NCCL
   * the other ranks wait for it, as NCCL does. */

  /* slot 53. This rank within comm. */
  uint32_t (*comm_rank)(const mstar_comm_t* comm);
  /* slot 54. Number of ranks in comm. */
  uint32_t (*comm_size)(const mstar_comm_t* comm);
  /* slot 55. recv = reduce(op) of every rank's send; send and recv may be the same tensor. */
  mstar_status_t* (*comm_all_reduce)(mstar_comm_t* comm, const mstar_tensor_t* send,
                                     mstar_tensor_t* recv, uint32_t op, mstar_stream_t* stream);
  /* slot 56. recv = concatenation along dim 0 of every rank's send, in rank order. */
  mstar_status_t* (*comm_all_gather)(mstar_comm_t* comm, const mstar_tensor_t* send,
                                     mstar_tensor_t* recv, mstar_stream_t* stream);
  /* slot 57. buffer on every rank = buffer on root. */
  mstar_status_t* (*comm_broadcast)(mstar_comm_t* comm, mstar_tensor_t* buffer, uint32_t root,
                                    mstar_stream_t* stream);
  /* slot 58. Sends tensor to peer. */
  mstar_status_t* (*comm_send)(mstar_comm_t* comm, const mstar_tensor_t* tensor, uint32_t peer,
                               mstar_stream_t* stream);
  /* slot 59. Receives into tensor from peer. */
  mstar_status_t* (*comm_recv)(mstar_comm_t* comm, mstar_tensor_t* tensor, uint32_t peer,
                               mstar_stream_t* stream);

  /* ---- Piecewise capture -------------------------------------------------------------------- */

  /* slot 60. Runs a submodule's named capture region (mstar/submodule.h, run_region) from inside
   * its forward: the host replays the region's graph for the current slot when one fits, and
   * otherwise calls run_region eagerly. inputs is borrowed; outputs (provided) receives the
   * region's outputs. Only valid from inside forward/forward_batched, on the same thread. */
  mstar_status_t* (*region_launch)(mstar_host_context_t* context, const char* region,
                                   const mstar_tensor_map_t* inputs, mstar_tensor_map_t* outputs,
                                   mstar_stream_t* stream);

  /* ---- Since 1.2 ---------------------------------------------------------------------------- */

  /* slot 61, since 1.2. Copies height rows of width bytes: row i from src + i * src_pitch to
   * dst + i * dst_pitch (pitches >= width), between any two memories, ordered on stream (NULL:
   * complete when the call returns). One call moves a strided region (a KV page's layers) as one
   * device copy instead of height small ones. Check host->struct_version >= 2 before calling. */
  mstar_status_t* (*memory_copy_2d)(void* dst, uint64_t dst_pitch, DLDevice dst_device,
                                    const void* src, uint64_t src_pitch, DLDevice src_device,
                                    uint64_t width, uint64_t height, mstar_stream_t* stream);
} mstar_host_api_t;

MSTAR_PIN_SLOT(mstar_host_api_t, status_new, 1);
MSTAR_PIN_SLOT(mstar_host_api_t, region_launch, 60);
MSTAR_PIN_SLOT(mstar_host_api_t, memory_copy_2d, 61);
MSTAR_STATIC_ASSERT(sizeof(mstar_host_api_t) == MSTAR_SLOT_OFFSET(62), "host table size (1.2)");

/* What the host creates every plugin instance with. Everything is borrowed and lives until the
 * instance's destroy returns. */
typedef struct mstar_create_args {
  uint32_t struct_size;
  uint32_t struct_version;
  const mstar_host_api_t* host;  /* the host services */
  mstar_host_context_t* context; /* this instance's context for host services */
  const char* instance_name;     /* node name, resource label, tier or model name */
  const mstar_config_t* config;  /* the instance's config table; never NULL, may be empty */
  DLDevice device;               /* where the instance runs */
  uint32_t rank;                 /* rank within the instance's parallel group */
  uint32_t world_size;           /* ranks in the group (1 when not parallel) */
  mstar_comm_t* comm;            /* the group's communicator; NULL when world_size == 1 */
  uint32_t num_tiers;            /* resources: the tier chain to offload to, nearest first */
  uint32_t reserved0;
  mstar_tier_handle_t* const* tiers;  /* num_tiers handles; NULL when none */
  const uint8_t* checkpoint_identity; /* bytes naming the model's weights; NULL when none */
  uint64_t checkpoint_identity_size;
  const char* base_dir; /* directory that relative paths in config resolve against */
} mstar_create_args_t;

MSTAR_EXTERN_C_END

#endif /* MSTAR_HOST_H_ */
