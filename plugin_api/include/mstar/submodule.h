/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/submodule.h: the `submodule` plugin kind, a model component (transformer backbone,
 * encoder, codec, diffusion head) that the engine runs one step at a time.
 *
 * One step of a node, in the order the host calls the hooks:
 *   prepare_inputs   per request, on the plan thread; may decline the request for this step
 *   (resources)      declare -> admit -> plan (mstar/resource.h)
 *   capture_begin    only while capturing a graph
 *   forward_batched  the batch (or forward, one request at a time, when batching is unsupported
 *                    or a batched call failed and the host retries per request to find the culprit)
 *   capture_end      only while capturing
 *   (resources)      commit
 *   postprocess      per request, overlapping the next launch
 *   check_stop       per request (or check_stop_batched), on a host copy of the outputs the
 *                    submodule named in its info, off the launch path
 * A failure in a per-request hook fails that request alone; the rest of the batch continues.
 *
 * Threading: the host never calls one instance from two threads at once. prepare_inputs and
 * check_stop may run on other threads than forward, but not concurrently with any other call on
 * the same instance.
 */
#ifndef MSTAR_SUBMODULE_H_
#define MSTAR_SUBMODULE_H_

#include "mstar/abi.h"
#include "mstar/host.h"
#include "mstar/request.h"

MSTAR_EXTERN_C_BEGIN

/* A stop mask's bit 63 (check_stop): the partition ends after the current walk. Loop bits are
 * 0 to 62. */
#define MSTAR_STOP_PARTITION (UINT64_C(1) << 63)

/* mstar_submodule_info_t.flags */
#define MSTAR_SUBMODULE_BATCHED 1u /* forward_batched takes batches of more than one request */
#define MSTAR_SUBMODULE_DETERMINISTIC 2u /* same inputs and seed give the same outputs */
/* Since 1.1. forward_batched also takes columnar steps (mstar/request.h, mstar_step_t): the
 * host may run a batch either way, so the per-request form stays required. Requires
 * MSTAR_SUBMODULE_BATCHED and a forward_batched; a columnar step gives each request exactly
 * what the per-request form gives it. The host runs columnar steps only for a node without
 * capture configurations, with its resources declared, admitted, planned and committed as for
 * any step, and calls no postprocess after them: a columnar forward writes what forward and
 * postprocess give together. */
#define MSTAR_SUBMODULE_COLUMNAR 4u
/* Since 1.4. A stream consumer that holds rows back (a codec that decodes a token only once it
 * has right context) and so must learn where its stream ends: the host then always hands its
 * partition a final chunk once the producer ends, even when every row was in an earlier chunk
 * (repeating the rows from the next chunk's start; where chunks do not overlap, the one reaching
 * the last row so far waits for a later row or the end), and marks that chunk's steps
 * MSTAR_REQUEST_FINAL_CHUNK (mstar/request.h). Ignored for a node negotiated below 1.4. */
#define MSTAR_SUBMODULE_FINAL_CHUNK 8u

/* Static facts about an instance. Pointers are borrowed until destroy. */
typedef struct mstar_submodule_info {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t flags;            /* MSTAR_SUBMODULE_* */
  uint32_t num_stop_outputs; /* at most 1024 (more is refused) */
  /* Output names check_stop reads. The host copies only these to host memory for the stop
   * check (when every output is in host memory already it passes the outputs as they are, so
   * the check may see others too); when empty the stop check sees no outputs. */
  const char* const* stop_outputs;
  /* Since 1.3; may be NULL. The input whose values are the token ids a step adds, one per token
   * (as many as prepare_inputs' num_tokens), as int32 or int64: the host hands them to the
   * node's resources (mstar_step_decl_t.input_tokens), which key prefix caches by them. Name one
   * only when what the step writes into resources depends on nothing but the checkpoint, these
   * ids and the positions before them (not, say, on embeddings fed beside the ids). */
  const char* token_input;
} mstar_submodule_info_t;

/* mstar_capture_config_t.flags */
#define MSTAR_CAPTURE_SPLIT_BY_KEY 1u /* no mixed keys in a batch (whole forwards, not regions) */
#define MSTAR_CAPTURE_PACKED 2u       /* buckets are over total tokens (prefill-style) */
#define MSTAR_CAPTURE_CAPS_BATCH 4u   /* the largest bucket also caps eager batches */

/* One captured shape. */
typedef struct mstar_capture_bucket {
  uint32_t batch_size; /* at most 65536; 0 in a PACKED config: any */
  uint32_t
      num_tokens; /* total tokens of the batch; batch_size * tokens per request unless PACKED */
} mstar_capture_bucket_t;

/* What to capture for one walk (or one piecewise region of it). Borrowed until destroy. */
typedef struct mstar_capture_config {
  uint32_t struct_size;
  uint32_t struct_version;
  const char* capture_walk;        /* the walk whose inputs the capture is made with */
  uint32_t num_replay_walks;       /* at most 1024 (more is refused) */
  uint32_t flags;                  /* MSTAR_CAPTURE_* */
  const char* const* replay_walks; /* walks that replay this capture */
  uint32_t num_buckets;            /* at most 4096 (more is refused) */
  uint32_t num_slots; /* independent copies per bucket (at most 64); 0: the host's default */
  const mstar_capture_bucket_t* buckets;
  const char* region;   /* NULL: the whole forward; else a region for run_region */
  uint64_t capture_key; /* requests of this key replay it (with SPLIT_BY_KEY) */
} mstar_capture_config_t;

/* The capture in progress, given to the capture hooks. */
typedef struct mstar_capture_info {
  uint32_t struct_size;
  uint32_t struct_version;
  const char* walk;
  const char* region; /* NULL for a whole-forward capture */
  mstar_capture_bucket_t bucket;
  int32_t slot;
  uint32_t reserved0;
  mstar_stream_t* stream; /* the capturing stream */
  /* Captures with the same pool key share one graph memory pool: a LibTorch plugin maps the key
   * to one allocator pool (the SDK's LibTorch helper does this). */
  uint64_t pool_key;
} mstar_capture_info_t;

typedef struct mstar_submodule_vtable {
  uint32_t struct_size;
  uint32_t struct_version; /* the negotiated minor */

  /* slot 0. Required. Creates an instance from args (borrowed; its pointers live until destroy).
   * Loads weights. On success *out_self is owned by the caller and freed with destroy. */
  mstar_status_t* (*create)(const mstar_create_args_t* args, void** out_self);
  /* slot 1. Required. Frees the instance and joins its threads. Never fails. */
  void (*destroy)(void* self);
  /* slot 2. Required. Static facts (filled into a host-provided struct). */
  mstar_status_t* (*info)(void* self, mstar_submodule_info_t* out_info);
  /* slot 3. Optional. Most requests one step of walk may hold; 0 means no cap. */
  mstar_status_t* (*max_batch_size)(void* self, const char* walk, uint32_t* out_max);
  /* slot 4. Required. Turns the request's node inputs (borrowed) into what the forward needs,
   * written to out (see mstar_prepared_t). Cheap host work only: it may run while a previous
   * step is still in flight, so it must not wait on device results. */
  mstar_status_t* (*prepare_inputs)(void* self, const mstar_request_info_t* request,
                                    const mstar_tensor_map_t* inputs, mstar_prepared_t* out);
  /* slot 5. Required. Runs the step for exactly one request (step->num_requests == 1), writing
   * its outputs to step->outputs[0]. On failure the host discards whatever was written. */
  mstar_status_t* (*forward)(void* self, const mstar_step_t* step);
  /* slot 6. Optional (requires MSTAR_SUBMODULE_BATCHED). Runs the step for the whole batch;
   * outputs[i] receives request i's outputs. On failure the host discards all outputs and
   * retries each request alone with forward to find the failing one. */
  mstar_status_t* (*forward_batched)(void* self, const mstar_step_t* step);
  /* slot 7. Optional. Per-request tail of the step on the host (rename or drop outputs, finish a
   * step whose graph captured only part of it). outputs is the request's output map. */
  mstar_status_t* (*postprocess)(void* self, const mstar_request_info_t* request,
                                 mstar_tensor_map_t* outputs);
  /* slot 8. Optional. Which enclosing loops should stop after this step: sets bit i of
   * *out_stop_mask to stop request->loop_names[i], or MSTAR_STOP_PARTITION to end the request's
   * partition after this walk (every enclosing loop stops and no transition follows: an end
   * token sampled outside a loop). host_outputs holds the outputs named in info.stop_outputs in
   * host memory (copies, or the outputs themselves when all were there). */
  mstar_status_t* (*check_stop)(void* self, const mstar_request_info_t* request,
                                const mstar_tensor_map_t* host_outputs, uint64_t* out_stop_mask);
  /* slot 9. Optional. check_stop over a whole batch at once: out_stop_masks[i] for requests[i].
   * On failure the host falls back to check_stop per request. */
  mstar_status_t* (*check_stop_batched)(void* self, uint32_t num_requests,
                                        const mstar_request_info_t* const* requests,
                                        const mstar_tensor_map_t* const* host_outputs,
                                        uint64_t* out_stop_masks);
  /* slot 10. Optional. The instance's capture configurations, borrowed until destroy. Absent or
   * zero configurations: the node always runs eagerly. */
  mstar_status_t* (*capture_configs)(void* self, uint32_t* out_count,
                                     const mstar_capture_config_t** out_configs);
  /* slot 11. Optional. One request's capture key for a walk, asked once per walk (the scheduler
   * groups by it with MSTAR_CAPTURE_SPLIT_BY_KEY) before the request is prepared. Absent: 0. */
  mstar_status_t* (*capture_key)(void* self, const mstar_request_info_t* request,
                                 uint64_t* out_key);
  /* slot 12. Optional. Called on the capturing stream just before the host starts capturing, so
   * the plugin can route its allocations into the capture's memory pool. */
  mstar_status_t* (*capture_begin)(void* self, const mstar_capture_info_t* capture);
  /* slot 13. Optional. Called after the capture ended (successfully or not); undoes
   * capture_begin. */
  mstar_status_t* (*capture_end)(void* self, const mstar_capture_info_t* capture);
  /* slot 14. Optional (required when a capture config names a region). Runs one named region
   * eagerly; the host calls it directly or while capturing the region's graph. */
  mstar_status_t* (*run_region)(void* self, const char* region, const mstar_tensor_map_t* inputs,
                                mstar_tensor_map_t* outputs, mstar_stream_t* stream);
  /* slot 15. Optional. One-time work before serving (compile, tune, touch weights). */
  mstar_status_t* (*warmup)(void* self, mstar_stream_t* stream);
  /* slot 16. Optional. Drops any per-request state kept for request_id. Never fails. */
  void (*cleanup_request)(void* self, mstar_request_id_t request_id);
  /* slot 17, since 1.1. Optional (with MSTAR_SUBMODULE_COLUMNAR). The stop check of a columnar
   * step (step->columnar_outputs is NULL here): host_outputs holds the outputs named in
   * info.stop_outputs for the whole batch in host memory, stacked as the forward wrote them, and
   * output_rows their row offsets as the forward wrote them; out_stop_masks[i] is set for
   * step->requests[i] as check_stop would (host-allocated, step->num_requests long). On failure
   * the host ignores the masks and falls back to check_stop per request. */
  mstar_status_t* (*check_stop_columnar)(void* self, const mstar_step_t* step,
                                         const mstar_tensor_map_t* host_outputs,
                                         const mstar_tensor_map_t* output_rows,
                                         uint64_t* out_stop_masks);
  /* slot 18, since 1.1. Optional (with MSTAR_SUBMODULE_COLUMNAR). prepare_inputs for a whole
   * columnar step at once: step->columnar_inputs and step->input_rows hold the requests' node
   * inputs stacked (step->columnar_outputs is NULL); the plugin appends what the forward needs
   * to out_prepared (one tensor per name, rows in request order, sharing the inputs where it
   * can), the offsets of names not one row per request to out_rows, and sets out_num_tokens[i]
   * for step->requests[i] (host-allocated, step->num_requests long; ignored on failure). It
   * cannot decline a request: a submodule that declines requests leaves this slot empty. The
   * host runs the step's forward on what it wrote. Absent: the host
   * runs no columnar steps whose inputs it would have to prepare this way. */
  mstar_status_t* (*prepare_inputs_columnar)(void* self, const mstar_step_t* step,
                                             mstar_tensor_map_t* out_prepared,
                                             mstar_tensor_map_t* out_rows,
                                             uint32_t* out_num_tokens);
} mstar_submodule_vtable_t;

MSTAR_PIN_SLOT(mstar_submodule_vtable_t, cleanup_request, 16);
MSTAR_PIN_SLOT(mstar_submodule_vtable_t, prepare_inputs_columnar, 18);
MSTAR_STATIC_ASSERT(sizeof(mstar_submodule_vtable_t) == MSTAR_SLOT_OFFSET(19),
                    "submodule table size (1.1)");

MSTAR_EXTERN_C_END

#endif /* MSTAR_SUBMODULE_H_ */
