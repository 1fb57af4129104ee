/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/resource.h: the `resource` plugin kind, stateful memory a node uses across steps (a paged
 * KV cache, cross-attention pools).
 *
 * The step protocol, for one node step over a batch:
 *   declare   the step: who is in it and how many tokens each request adds
 *   admit     per request: READY (capacity taken), NOT_READY (try again later; the reason says
 *             whether freeing capacity would help) or UNSERVABLE (an error status: the request
 *             can never run here and fails with that message)
 *   plan      write the step's view (block tables, slot mappings) as tensors for the forward
 *   commit    after the forward: make the step's effects permanent for the requests that
 *             succeeded and roll them back for those that failed
 *   abort_step  a declared step that will not run: return everything admit took
 * Pre-planning runs declare/admit/plan one step early, into the capture slot leased for that step
 * (mstar_step_decl_t.preplan); the host asks preplan_is_stale before launching and
 * reset_pre_plan when a pre-planned step never dispatches. Slot ids are unique within an engine
 * (across its nodes and their buckets), so a resource several nodes use may key plans by slot.
 *
 * Memory pressure: when admit answers NOT_READY for capacity, the host picks a victim by its
 * eviction policy (reclaimable, offload_priority) and calls offload; reload brings a request back.
 * Every move of resident state is recorded so take_resident_delta can ship it to follower ranks,
 * which replay it with apply_resident_delta.
 *
 * Threading: the host never calls one instance from two threads at once.
 */
#ifndef MSTAR_RESOURCE_H_
#define MSTAR_RESOURCE_H_

#include "mstar/abi.h"
#include "mstar/host.h"
#include "mstar/request.h"

MSTAR_EXTERN_C_BEGIN

/* mstar_admit_t.outcome */
#define MSTAR_ADMIT_READY 0u
#define MSTAR_ADMIT_NOT_READY 1u
#define MSTAR_ADMIT_UNSERVABLE 2u /* set by the host when the hook returned an error status */

/* mstar_admit_t.wait_reason, for NOT_READY */
#define MSTAR_WAIT_CAPACITY 1u /* freeing capacity (offloading someone) would help */
#define MSTAR_WAIT_TRANSFER 2u /* waiting for published state from another worker to land */
#define MSTAR_WAIT_RELOAD 3u   /* waiting for the request's own offloaded state to come back */
#define MSTAR_WAIT_OTHER 4u

/* An admission answer, filled into a host-provided struct. */
typedef struct mstar_admit {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t outcome;     /* MSTAR_ADMIT_* */
  uint32_t wait_reason; /* MSTAR_WAIT_* when NOT_READY */
  uint64_t units_short; /* CAPACITY: how many units (pages) are missing */
} mstar_admit_t;

/* mstar_resource_info_t.flags */
#define MSTAR_RESOURCE_CAN_PRE_PLAN 1u /* plan may run a step ahead into a leased slot */
#define MSTAR_RESOURCE_NEEDS_SLOT_FENCE \
  2u                                      /* plan stages into reused host buffers: reusing a
                                               slot must wait for the work that last used it */
#define MSTAR_RESOURCE_EVICTABLE 4u       /* offload/reload are implemented */
#define MSTAR_RESOURCE_PUBLISHES 8u       /* publish/check_ready move state between workers */
#define MSTAR_RESOURCE_RESIDENT_DELTA 16u /* take/apply_resident_delta are implemented */

typedef struct mstar_resource_info {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t flags; /* MSTAR_RESOURCE_* */
  uint32_t reserved0;
  const char* unit; /* what capacity is counted in ("pages"); borrowed until destroy */
} mstar_resource_info_t;

typedef struct mstar_resource_stats {
  uint32_t struct_size;
  uint32_t struct_version;
  uint64_t capacity_units;
  uint64_t used_units;      /* held by requests (cached_units not included) */
  uint64_t cached_units;    /* held only by a cache (reclaimable without offloading anyone) */
  uint64_t offloaded_units; /* resident in tiers */
} mstar_resource_stats_t;

typedef struct mstar_resource_vtable {
  uint32_t struct_size;
  uint32_t struct_version; /* the negotiated minor */

  /* slot 0. Required. Creates an instance (args borrowed until destroy; tiers in args). */
  mstar_status_t* (*create)(const mstar_create_args_t* args, void** out_self);
  /* slot 1. Required. Frees the instance after any copy in flight has landed. Never fails. */
  void (*destroy)(void* self);
  /* slot 2. Required. Static facts. */
  mstar_status_t* (*info)(void* self, mstar_resource_info_t* out_info);
  /* slot 3. Required. A request starts using this resource. */
  mstar_status_t* (*add_request)(void* self, const mstar_request_info_t* request);
  /* slot 4. Required. The request is gone: release everything it holds (cached pages may stay in
   * a prefix cache). Never fails. */
  void (*remove_request)(void* self, mstar_request_id_t request_id);
  /* slot 5. Required. Declares a step. A second declare replaces an undispatched one. */
  mstar_status_t* (*declare)(void* self, const mstar_step_decl_t* step);
  /* slot 6. Required. Admits request `index` of the declared step (see the protocol above). */
  mstar_status_t* (*admit)(void* self, const mstar_step_decl_t* step, uint32_t index,
                           mstar_admit_t* out);
  /* slot 7. Required. Plans the admitted requests of the step into out_view (provided), ordering
   * any device work on stream (the host's plan stream: it may run while the previous step's
   * forward still runs; the forward that reads the view is ordered after it). */
  mstar_status_t* (*plan)(void* self, const mstar_step_decl_t* step, mstar_tensor_map_t* out_view,
                          mstar_stream_t* stream);
  /* slot 8. Required. Completes the step: succeeded[i] says whether request i's forward ran. */
  mstar_status_t* (*commit)(void* self, const mstar_step_decl_t* step, const uint8_t* succeeded,
                            mstar_stream_t* stream);
  /* slot 9. Required. The declared step will not run: undo admit. Never fails. */
  void (*abort_step)(void* self, const mstar_step_decl_t* step);
  /* slot 10. Optional (CAN_PRE_PLAN). Whether what was pre-planned into step->slot no longer
   * describes step (a request left, a page moved). */
  mstar_status_t* (*preplan_is_stale)(void* self, const mstar_step_decl_t* step,
                                      uint32_t* out_stale);
  /* slot 11. Optional (CAN_PRE_PLAN). Drops what was pre-planned into slot (-1: every slot),
   * returning the padding rows' capacity. Never fails. */
  void (*reset_pre_plan)(void* self, int32_t slot);
  /* slot 12. Optional (PUBLISHES). Takes in what another worker published for the request
   * (borrowed bytes, may be empty) and says whether it has landed. */
  mstar_status_t* (*check_ready)(void* self, const mstar_request_info_t* request,
                                 const void* published, uint64_t published_size,
                                 mstar_admit_t* out);
  /* slot 13. Optional (PUBLISHES). Appends what another worker needs to continue the request
   * (e.g. its KV pages) to out (provided). */
  mstar_status_t* (*publish)(void* self, mstar_request_id_t request_id, mstar_bytes_t* out);
  /* slot 14. Optional (EVICTABLE). Units offloading the request would free; 0: not a candidate. */
  mstar_status_t* (*reclaimable)(void* self, mstar_request_id_t request_id, uint64_t* out_units);
  /* slot 15. Optional (EVICTABLE). Moves up to max_units (0: all) of the request to the tiers.
   * Capacity is reusable only once the copies have landed (the resource orders that itself).
   * stream: the host's copy stream, ordered after every forward given so far (reload's too).
   * *out_reclaimed: units freed; 0 means nothing moved. */
  mstar_status_t* (*offload)(void* self, mstar_request_id_t request_id, uint64_t max_units,
                             mstar_stream_t* stream, uint64_t* out_reclaimed);
  /* slot 16. Optional (EVICTABLE). Brings the request back; *out_done 0 when it does not fit yet
   * (it stays offloaded). A tier that lost the data is MSTAR_ERR_DATA_LOSS: the host then drops the
   * request's state everywhere (remove_request) and recomputes it from its prompt, or fails it;
   * any other error fails the request. */
  mstar_status_t* (*reload)(void* self, mstar_request_id_t request_id, mstar_stream_t* stream,
                            uint32_t* out_done);
  /* slot 17. Optional (EVICTABLE). Whether any of the request is offloaded. */
  mstar_status_t* (*is_offloaded)(void* self, mstar_request_id_t request_id, uint32_t* out);
  /* slot 18. Optional. How much this resource wants the request gone (PRIORITY eviction);
   * larger is evicted first. */
  mstar_status_t* (*offload_priority)(void* self, mstar_request_id_t request_id, double* out);
  /* slot 19. Optional (RESIDENT_DELTA). Appends every move since the last call to out. */
  mstar_status_t* (*take_resident_delta)(void* self, mstar_bytes_t* out);
  /* slot 20. Optional (RESIDENT_DELTA). Replays a leader's delta from its start. *out_consumed:
   * bytes fully applied; *out_complete 0 when a move has not landed yet (retry with the rest).
   * MSTAR_ERR_FAILED_PRECONDITION, with the reason, when this replica's state diverges. */
  mstar_status_t* (*apply_resident_delta)(void* self, const void* delta, uint64_t size,
                                          uint64_t* out_consumed, uint32_t* out_complete);
  /* slot 21. Optional. Keys what the last step generated (host copy of its tokens) into the
   * request's prefix chain. (Since 1.3 a resource may key by mstar_step_decl_t.input_tokens
   * instead, which give every step's ids, the prompt's included; kv_paged does.) */
  mstar_status_t* (*extend_prefix_chains)(void* self, mstar_request_id_t request_id,
                                          const mstar_tensor_t* host_tokens);
  /* slot 22. Optional. Capacity figures for scheduling and metrics. */
  mstar_status_t* (*stats)(void* self, mstar_resource_stats_t* out);
} mstar_resource_vtable_t;

MSTAR_PIN_SLOT(mstar_resource_vtable_t, stats, 22);
MSTAR_STATIC_ASSERT(sizeof(mstar_resource_vtable_t) == MSTAR_SLOT_OFFSET(23),
                    "resource table size (1.0)");

MSTAR_EXTERN_C_END

#endif /* MSTAR_RESOURCE_H_ */
