/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/request.h: what the host tells submodules and resources about requests and steps.
 *
 * One step runs one node of the model graph over a batch of requests that are all at the same
 * walk. The host describes the step twice: to resources as an mstar_step_decl_t (who is in the
 * step and how many tokens each adds) and to the submodule as an mstar_step_t (the prepared
 * inputs, the resources' planned views and the maps to fill with outputs). All of it is borrowed
 * for the duration of the hook that receives it.
 */
#ifndef MSTAR_REQUEST_H_
#define MSTAR_REQUEST_H_

#include "mstar/abi.h"
#include "mstar/host.h"

MSTAR_EXTERN_C_BEGIN

/* mstar_request_info_t.flags (since 1.4; read them only when struct_version >= 4) */
/* The chunk this step's partition consumes is its stream's last: the producer has ended and no
 * chunk follows for this request. Set on every step of the walk run that chunk started. */
#define MSTAR_REQUEST_FINAL_CHUNK 1u

/* Where one request stands when a hook sees it. */
typedef struct mstar_request_info {
  uint32_t struct_size;
  uint32_t struct_version;
  mstar_request_id_t request_id;
  const char* walk;      /* the walk this step belongs to ("prefill", "decode", ...) */
  const char* partition; /* the request's partition running the walk ("default" when one) */
  /* The loops enclosing this node in the walk, outermost first. A stop check names loops by
   * their index in this list (mstar/submodule.h, check_stop). */
  uint32_t num_loops;
  uint32_t reserved0;
  const char* const* loop_names;
  const uint32_t* loop_iterations;     /* current iteration of each loop, from 0 */
  const uint32_t* loop_max_iterations; /* each loop's limit for this request */
  uint64_t seed;                       /* the request's sampling seed: deterministic per request */
  int32_t priority;                    /* larger runs first */
  uint32_t flags;                      /* since 1.4: MSTAR_REQUEST_* (0 before) */
  const mstar_config_t* params;        /* the request's parameters (sampling, limits); never NULL */
  const uint8_t* tenant_salt;          /* mixed into prefix-cache keys; NULL when none */
  uint64_t tenant_salt_size;
} mstar_request_info_t;

/* What submodule.prepare_inputs hands back for one request. The host fills struct_size,
 * struct_version and `tensors` (an empty map the host owns); the plugin sets the rest. */
typedef struct mstar_prepared {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t decline;            /* nonzero: leave this request out of this step (not an error) */
  uint32_t num_tokens;         /* tokens the step adds for this request (declared to resources) */
  uint64_t capture_key;        /* capture group of the request (see capture_key in submodule.h) */
  mstar_tensor_map_t* tensors; /* provided: the inputs the forward will see for this request */
} mstar_prepared_t;

/* A step as resources see it. */
typedef struct mstar_step_decl {
  uint32_t struct_size;
  uint32_t struct_version;
  const char* node;
  const char* walk;
  uint32_t num_requests;
  int32_t slot;                          /* the capture slot leased for the step, or -1 (eager) */
  const mstar_request_id_t* request_ids; /* num_requests ids */
  const uint32_t* num_tokens;            /* tokens each request adds */
  const mstar_request_info_t* const* requests; /* num_requests infos */
  uint32_t preplan;     /* nonzero when the host plans this step ahead of its launch */
  uint32_t padded_rows; /* rows beyond num_requests that a captured graph pads with */
  /* Since 1.3 (read it only when struct_version >= 3). The token ids each request's step adds,
   * at the positions right after what the resource holds of it: NULL when no request's are
   * known, else num_requests entries, each NULL (unknown) or num_tokens[i] int32 or int64 values
   * in host memory, 1-D and contiguous. They come from the node's input named
   * mstar_submodule_info_t.token_input, as the step received it (before prepare_inputs), so
   * they are what the model computes, never what a client claims. Borrowed for the call.
   * Resources key prefix caches by them. */
  const mstar_tensor_t* const* input_tokens;
} mstar_step_decl_t;

/* One resource's planned view of the step, handed to the submodule's forward. */
typedef struct mstar_resource_view {
  uint32_t struct_size;
  uint32_t struct_version;
  const char* label;                 /* the resource's label within the node ("kv") */
  const mstar_tensor_map_t* tensors; /* what the resource's plan produced (block tables, ...) */
} mstar_resource_view_t;

/* A step as the submodule's forward sees it. */
typedef struct mstar_step {
  uint32_t struct_size;
  uint32_t struct_version;
  const char* node;
  const char* walk;
  uint32_t num_requests;
  int32_t slot;                                /* capture slot of the step, or -1 when eager */
  const mstar_request_info_t* const* requests; /* num_requests infos */
  const mstar_tensor_map_t* const* inputs;     /* per request: what prepare_inputs produced */
  const uint32_t* num_tokens;                  /* per request */
  uint32_t num_resources;
  uint32_t capturing; /* nonzero while this call is being captured into a graph */
  const mstar_resource_view_t* resources; /* num_resources views */
  mstar_tensor_map_t* const* outputs;     /* provided, per request: empty maps to fill */
  mstar_stream_t* stream; /* the execution stream; all device work of the call goes here */
  uint32_t padded_rows;   /* rows beyond num_requests present for a captured shape */
  uint32_t reserved0;
  /* Since 1.1: the columnar form (MSTAR_SUBMODULE_COLUMNAR in mstar/submodule.h). NULL in a
   * per-request step. In a columnar step `inputs` and `outputs` are NULL and the batch travels
   * as one tensor per name, the rows of every request stacked along the first dimension in
   * request order. Row counts: a name listed in a rows map has an int64 tensor of
   * num_requests + 1 offsets there (from 0, non-decreasing, the last equal to the tensor's first
   * dimension; request i owns rows [offsets[i], offsets[i + 1])); a name not listed has exactly
   * one row per request. */
  const mstar_tensor_map_t* columnar_inputs; /* borrowed: one tensor per input name */
  const mstar_tensor_map_t* input_rows;      /* borrowed: offsets of inputs not one per row */
  mstar_tensor_map_t* columnar_outputs;      /* provided, empty: one tensor per output name */
  mstar_tensor_map_t* output_rows; /* provided, empty: offsets of outputs not one per request */
} mstar_step_t;

MSTAR_EXTERN_C_END

#endif /* MSTAR_REQUEST_H_ */
