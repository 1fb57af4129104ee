/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/tier.h: the `tier` plugin kind, a keyed block store that resources offload to (host
 * memory, disk, a remote store).
 *
 * A tier stores opaque blocks under 32-byte keys. All work is batched and asynchronous: the caller
 * submits an array of operations and receives a batch handle; it learns completion by polling or
 * waiting, and reads each operation's result from the array once the batch is complete. A tier
 * never reports a block it cannot return intact: a block that fails its checks on read completes
 * with MSTAR_ERR_DATA_LOSS, and the caller recomputes.
 *
 * Resources do not call a tier's table directly; they go through the host's tier services
 * (mstar/host.h), which forward here, so that the host can gate slots by version, account and log.
 */
#ifndef MSTAR_TIER_H_
#define MSTAR_TIER_H_

#include "mstar/abi.h"
#include "mstar/status.h"

MSTAR_EXTERN_C_BEGIN

struct mstar_create_args;

/* Operation kinds (mstar_tier_op_t.kind). */
#define MSTAR_TIER_OP_CONTAINS 1u /* result MSTAR_OK when present, MSTAR_ERR_NOT_FOUND when not */
#define MSTAR_TIER_OP_PUT 2u      /* store size bytes from data under key (replacing any block) */
#define MSTAR_TIER_OP_GET 3u      /* copy the block into data; size must equal the stored size */
#define MSTAR_TIER_OP_REMOVE 4u   /* drop the block; MSTAR_ERR_NOT_FOUND when absent */

/* A block key, typically a SHA-256 digest. */
typedef struct mstar_tier_key {
  uint8_t bytes[32];
} mstar_tier_key_t;

/* One operation in a batch. The caller owns the array and everything it points to until the
 * batch completes (or is released). The tier writes only `result`. Every op's struct_size is
 * sizeof(mstar_tier_op_t) (unchanged since 1.0; both sides index the array by it): the host
 * refuses a batch with any other. */
typedef struct mstar_tier_op {
  uint32_t struct_size;
  uint32_t struct_version;
  uint32_t kind;   /* MSTAR_TIER_OP_* */
  uint32_t result; /* out: MSTAR_OK or an MSTAR_ERR_* code, valid once the batch is done */
  mstar_tier_key_t key;
  void* data;      /* PUT: source; GET: destination; unused otherwise. May be NULL if size 0 */
  uint64_t size;   /* bytes at data */
  DLDevice device; /* where data lives (host, pinned host, or device memory) */
} mstar_tier_op_t;

/* Capacity and properties of a tier. */
typedef struct mstar_tier_info {
  uint32_t struct_size;
  uint32_t struct_version;
  uint64_t capacity_bytes; /* 0 when unbounded */
  uint64_t used_bytes;
  uint32_t persistent;    /* blocks survive a restart of the process */
  uint32_t device_access; /* accepts device pointers in ops (else the caller stages via host) */
} mstar_tier_info_t;

/* A submitted batch, owned by the tier until released. */
typedef struct mstar_tier_batch mstar_tier_batch_t;

/* The tier's function table. Threading: the host serializes calls on one tier instance;
 * completion may happen on the tier's own threads. */
typedef struct mstar_tier_vtable {
  uint32_t struct_size;
  uint32_t struct_version; /* the negotiated minor */

  /* Required. Creates an instance. args is borrowed; its pointers live until destroy. On success
   * *out_self is the instance (owned by the caller, freed with destroy). */
  mstar_status_t* (*create)(const struct mstar_create_args* args, void** out_self);
  /* Required. Frees the instance. Waits for (or cancels) batches still in flight and joins any
   * thread the instance started. Never fails. */
  void (*destroy)(void* self);
  /* Required. Capacity and properties. */
  mstar_status_t* (*info)(void* self, mstar_tier_info_t* out_info);
  /* Required. Starts count operations. ops is borrowed until the batch completes or is released.
   * stream (may be NULL) orders device copies. On success *out_batch is a batch owned by the tier
   * until the caller releases it. A failure here means nothing was started. */
  mstar_status_t* (*submit)(void* self, mstar_tier_op_t* ops, uint32_t count,
                            mstar_stream_t* stream, mstar_tier_batch_t** out_batch);
  /* Required. Sets *out_done to 1 when every op of the batch has its result. Never blocks. */
  mstar_status_t* (*poll)(void* self, mstar_tier_batch_t* batch, uint32_t* out_done);
  /* Required. Blocks until the batch completes or timeout_ns passes (UINT64_MAX: no limit);
   * MSTAR_ERR_UNAVAILABLE on timeout. */
  mstar_status_t* (*wait)(void* self, mstar_tier_batch_t* batch, uint64_t timeout_ns);
  /* Required. Frees a batch. Releasing an incomplete batch first waits for it to finish. */
  void (*release)(void* self, mstar_tier_batch_t* batch);
} mstar_tier_vtable_t;

MSTAR_PIN_SLOT(mstar_tier_vtable_t, release, 6);
MSTAR_STATIC_ASSERT(sizeof(mstar_tier_vtable_t) == MSTAR_SLOT_OFFSET(7), "tier table size (1.0)");

MSTAR_EXTERN_C_END

#endif /* MSTAR_TIER_H_ */
