/* Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0 */
/*
 * mstar/tensor.h: how a tensor crosses the boundary.
 *
 * A tensor is a DLPack DLTensor wrapped in mstar_tensor_t, which adds what DLPack 1.x puts in
 * DLManagedTensorVersioned: a version, flags and a deleter. We wrap rather than use
 * DLManagedTensorVersioned directly because the DLPack headers packaged by the distributions we
 * build on (Debian's libdlpack-dev is 0.6) predate it; DLTensor itself has had the same layout
 * from DLPack 0.6 through 1.x (data, device, ndim, dtype, shape, strides, byte_offset), so the
 * wrapper is layout-stable whichever DLPack header a plugin compiles against.
 *
 * Version:   struct_version is MSTAR_TENSOR_VERSION of the producer. dlpack_major/dlpack_minor
 *            name the DLPack header the producer compiled against (0.6 is major 0, minor 6); a
 *            consumer that cannot read that DLTensor layout (a future DLPack major) must not read
 *            `dl` and may only call the deleter.
 * Flags:     MSTAR_TENSOR_FLAG_READ_ONLY and MSTAR_TENSOR_FLAG_IS_COPIED have the bit values of
 *            DLPack 1.x's DLPACK_FLAG_BITMASK_READ_ONLY / _IS_COPIED and the same meaning: a
 *            consumer never writes through a read-only tensor; IS_COPIED says the producer made a
 *            private copy, so the consumer may keep it without aliasing the producer's storage.
 *            Bits 32 and up are this ABI's own: MSTAR_TENSOR_FLAG_STABLE marks a tensor that its
 *            producer hands out with the same data, address and layout on every step (a resource's
 *            page pool), so a captured graph may keep reading it in place instead of a copy. A
 *            host that does not know a flag ignores it.
 * Strides:   always filled (never NULL), in elements, as DLPack 1.2+ requires. A tensor the host
 *            reads or writes as bytes must be compact (contiguous, row-major: each stride the
 *            product of the later dimensions; a dimension of size 1 may have any stride): every
 *            tensor appended to a host map (forward outputs, prepared inputs, views) and every
 *            communicator tensor. Others are refused; make them contiguous first (LibTorch:
 *            .contiguous(); the SDK's FromTorch does).
 * Sizes:     the element count and the byte size must fit in int64_t.
 * Empty:     a tensor with zero elements has data == NULL.
 * Deleter:   called exactly once by whoever owns the tensor, when done with it. It frees `self`
 *            and what it manages, may run on any thread, and must not block on the host. Of the
 *            host services it may call only tensor_release and memory_free, to drop host tensors
 *            and memory it holds (an at::Tensor made by the SDK's ToTorch releases its host
 *            reference so when freed); the host never runs a deleter while holding a lock those
 *            take. It may be NULL only for tensors that own nothing (the owner then does
 *            nothing). A borrowed tensor (const mstar_tensor_t*) is never deleted by the borrower;
 *            use the host's tensor_share (mstar/host.h) to keep a reference beyond the call.
 * Streams:   a tensor's contents are ready on the stream of the call that produced it. A consumer
 *            on another stream waits on an event, never on a full device synchronisation.
 */
#ifndef MSTAR_TENSOR_H_
#define MSTAR_TENSOR_H_

#include "mstar/abi.h"

MSTAR_EXTERN_C_BEGIN

/* The version of mstar_tensor_t these headers define. */
#define MSTAR_TENSOR_VERSION 1u

/* The consumer must not write to the data. */
#define MSTAR_TENSOR_FLAG_READ_ONLY (UINT64_C(1) << 0)
/* The producer copied the data for this tensor; nothing else aliases it. */
#define MSTAR_TENSOR_FLAG_IS_COPIED (UINT64_C(1) << 1)
/* The producer hands out this storage at the same address on every step (see Flags above). */
#define MSTAR_TENSOR_FLAG_STABLE (UINT64_C(1) << 32)

/* The DLPack header version this translation unit compiles against, as (major, minor). */
#if defined(DLPACK_MAJOR_VERSION)
#define MSTAR_DLPACK_MAJOR DLPACK_MAJOR_VERSION
#define MSTAR_DLPACK_MINOR DLPACK_MINOR_VERSION
#else
#define MSTAR_DLPACK_MAJOR (DLPACK_VERSION / 100)
#define MSTAR_DLPACK_MINOR ((DLPACK_VERSION % 100) / 10)
#endif

typedef struct mstar_tensor {
  uint32_t struct_size;    /* sizeof(mstar_tensor_t) as the producer compiled it */
  uint32_t struct_version; /* MSTAR_TENSOR_VERSION of the producer */
  uint32_t dlpack_major;   /* DLPack header the producer used (see above) */
  uint32_t dlpack_minor;
  uint64_t flags;    /* MSTAR_TENSOR_FLAG_* */
  DLTensor dl;       /* the tensor; shape and strides are owned with the tensor */
  void* manager_ctx; /* producer's private state; opaque to everyone else */
  /* Frees self and what it manages. See the deleter rules above. */
  void (*deleter)(struct mstar_tensor* self);
} mstar_tensor_t;

MSTAR_STATIC_ASSERT(offsetof(mstar_tensor_t, dl) == 24, "mstar_tensor_t.dl moved");

MSTAR_EXTERN_C_END

#endif /* MSTAR_TENSOR_H_ */
