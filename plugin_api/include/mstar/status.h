/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/status.h: the error codes carried by mstar_status_t.
 *
 * A status is an opaque host object holding one of the codes below and a UTF-8 message. Plugins
 * create them only through the host's status_new and never free one they returned; whoever
 * receives a status owns it and releases it with status_release (mstar/host.h).
 *
 * Each code says what the caller may do next. The set is closed within a major: a reader that
 * meets a value it does not know treats it as MSTAR_ERR_INTERNAL.
 */
#ifndef MSTAR_STATUS_H_
#define MSTAR_STATUS_H_

#include "mstar/abi.h"

MSTAR_EXTERN_C_BEGIN

/* Success. Never carried by a status object: success is a NULL status. */
#define MSTAR_OK 0u
/* The arguments are wrong (bad shape, unknown name, bad config value). Retrying unchanged fails
 * again. */
#define MSTAR_ERR_INVALID_ARGUMENT 1u
/* The named thing (key, request, tensor, block) does not exist. */
#define MSTAR_ERR_NOT_FOUND 2u
/* The thing to be created exists already. */
#define MSTAR_ERR_ALREADY_EXISTS 3u
/* This object never supports the operation; do not retry. Optional hooks that a plugin leaves
 * out behave as if they returned this code. */
#define MSTAR_ERR_UNSUPPORTED 4u
/* Temporarily impossible (a copy is still in flight, a peer is not ready). Retry later. */
#define MSTAR_ERR_UNAVAILABLE 5u
/* Out of capacity (memory, pages, tier space). Free something, or wait, and retry. */
#define MSTAR_ERR_RESOURCE_EXHAUSTED 6u
/* The object's state does not allow the call (for example a resident delta that does not match
 * this replica's state). The message says which state. */
#define MSTAR_ERR_FAILED_PRECONDITION 7u
/* Versions do not fit (ABI, DLPack, file format, checkpoint identity). */
#define MSTAR_ERR_INCOMPATIBLE 8u
/* An operating-system input/output call failed (read, write, fsync, rename). */
#define MSTAR_ERR_IO 9u
/* Stored data is corrupt or truncated (a checksum or length check failed). */
#define MSTAR_ERR_DATA_LOSS 10u
/* The operation was cancelled by its caller. */
#define MSTAR_ERR_CANCELLED 11u
/* A bug: a broken invariant or an exception caught at the plugin boundary. */
#define MSTAR_ERR_INTERNAL 12u

/* One past the largest code this minor defines. */
#define MSTAR_STATUS_CODE_COUNT 13u

MSTAR_EXTERN_C_END

#endif /* MSTAR_STATUS_H_ */
