/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/model.h: the optional `model` plugin kind, a model's walk controller.
 *
 * A model manifest declares its walks and, for models whose walks form a plain state machine,
 * the transitions between them; such models need no controller. A controller takes over where
 * that is not enough: it turns a client's prompt into the first tensors, chooses each partition's
 * next walk when the previous one finishes, and turns outputs emitted to the client into bytes.
 *
 * Threading: the host never calls one instance from two threads at once. Hooks run on the
 * conductor, off the launch path, and must not block on device work.
 */
#ifndef MSTAR_MODEL_H_
#define MSTAR_MODEL_H_

#include "mstar/abi.h"
#include "mstar/host.h"
#include "mstar/request.h"

MSTAR_EXTERN_C_BEGIN

/* A walk decision, filled into a host-provided struct. */
typedef struct mstar_walk_choice {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t done; /* nonzero: the partition (and, when all are done, the request) ends */
  uint32_t reserved0;
  const char* walk; /* the next walk, a name from the manifest; borrowed until destroy */
  /* provided: tensors for the chosen walk, each under a NAME its manifest reads as an input
   * "controller.NAME"; fed when the walk starts (an input whose NAME is missing fails the
   * request; names no input reads are released) */
  mstar_tensor_map_t* inputs;
} mstar_walk_choice_t;

/* Where a partition stands when its walk finished. Borrowed for the call. */
typedef struct mstar_walk_state {
  uint32_t struct_size;
  uint32_t struct_version;
  const mstar_request_info_t* request;
  const char* partition;
  const char* finished_walk;
  const mstar_tensor_map_t* persisted; /* tensors on persist edges so far */
  uint64_t tokens_emitted;             /* tokens counted toward the request's output limit */
  uint64_t stream_produced;            /* streaming partitions: items the producer emitted */
  uint64_t stream_consumed;            /* items this partition consumed */
  uint32_t producer_done;              /* the producing partition has finished */
  uint32_t reserved0;
} mstar_walk_state_t;

typedef struct mstar_model_vtable {
  uint32_t struct_size;
  uint32_t struct_version; /* the negotiated minor */

  /* slot 0. Required. Creates an instance (args borrowed until destroy). */
  mstar_status_t* (*create)(const mstar_create_args_t* args, void** out_self);
  /* slot 1. Required. Frees the instance. Never fails. */
  void (*destroy)(void* self);
  /* slot 2. Required. Turns the client's prompt (prompt_size bytes, borrowed) into the request's
   * initial tensors, appended to out_inputs (provided). */
  mstar_status_t* (*encode_prompt)(void* self, const mstar_request_info_t* request,
                                   const char* prompt, uint64_t prompt_size,
                                   mstar_tensor_map_t* out_inputs);
  /* slot 3. Optional. The first walk of a partition. Absent: the manifest's initial walk. */
  mstar_status_t* (*first_walk)(void* self, const mstar_request_info_t* request,
                                const char* partition, mstar_walk_choice_t* out);
  /* slot 4. Optional. The next walk of a partition. Absent: the manifest's transitions. */
  mstar_status_t* (*next_walk)(void* self, const mstar_walk_state_t* state,
                               mstar_walk_choice_t* out);
  /* slot 5. Optional. Turns a tensor emitted to the client on edge with modality ("text",
   * "audio", ...) into bytes appended to out (provided). Absent: the host sends raw bytes. */
  mstar_status_t* (*encode_output)(void* self, const mstar_request_info_t* request,
                                   const char* edge, const char* modality,
                                   const mstar_tensor_t* tensor, mstar_bytes_t* out);
} mstar_model_vtable_t;

MSTAR_PIN_SLOT(mstar_model_vtable_t, encode_output, 5);
MSTAR_STATIC_ASSERT(sizeof(mstar_model_vtable_t) == MSTAR_SLOT_OFFSET(6), "model table size (1.0)");

MSTAR_EXTERN_C_END

#endif /* MSTAR_MODEL_H_ */
