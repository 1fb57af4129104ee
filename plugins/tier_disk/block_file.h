// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// One block per file: the on-disk format and the safe write and verified read of a block file.
//
// Format (little-endian), 80 bytes of header then the payload:
//   magic "MSTRTBLK" (8) | format version u32 = 2 | header size u32 = 80 | key (32) |
//   payload size u64 | XXH3-128 of the payload (low u64, high u64) |
//   XXH3-64 of the 72 header bytes before it u64
// Version 1 (a 64-byte header with CRC-32C checksums) is no longer read: such a file fails the
// version check (DATA_LOSS), and the identity file names the version, so a directory of
// version-1 blocks is wiped at start-up.
// A block is written to a temporary file in the same directory (StageBlockFile), fsynced and
// only then renamed over the final name (CommitBlockFile; for a persistent tier the directory is
// then fsynced, SyncDirectory, so that the rename survives a crash), so a reader sees either the
// old block, the new block, or none: never a torn one. Every read checks the header and the payload checksum; a file that fails any
// check is reported as MSTAR_ERR_DATA_LOSS and never as data.
#pragma once

#include <cstdint>
#include <string>

#include "file_ops.h"
#include "mstar/tier.h"

namespace mstar::tier_disk {

inline constexpr uint32_t kBlockFormatVersion = 2;
inline constexpr uint64_t kBlockHeaderSize = 80;
// The largest payload a block file holds: a GET reads header, payload and one probe byte with
// one readv, and Linux moves at most 0x7ffff000 bytes per call.
inline constexpr uint64_t kMaxBlockPayload = 0x7ffff000ull - kBlockHeaderSize - 1;
// Block files are <64 hex digits of the key>.blk; a PUT writes <64 hex digits>.tmp.<pid>.<n>
// first and renames it.
inline constexpr const char* kBlockSuffix = ".blk";
inline constexpr const char* kTempMarker = ".tmp.";

// An MSTAR_* code and, on failure, a message naming the file and the failed call.
struct Outcome {
  uint32_t code = MSTAR_OK;
  std::string message;
  bool ok() const { return code == MSTAR_OK; }
};

std::string KeyHex(const mstar_tier_key_t& key);
// Parses a block file name back into its key; false for any other name.
bool ParseBlockFileName(const std::string& name, mstar_tier_key_t* out_key);
// Whether name is a PUT's temporary file (<64 hex digits>.tmp.<digits>.<digits>).
bool IsBlockTempFileName(const std::string& name);
// MSTAR_ERR_RESOURCE_EXHAUSTED for a full disk or quota (ENOSPC, EDQUOT), MSTAR_ERR_IO otherwise.
uint32_t CodeForErrno(int error);

// A block written to its temporary file, not yet durable nor visible under its final name.
// Owns the temporary file and its descriptor from the moment StageBlockFile created it until
// CommitBlockFile consumed it: destroyed (or assigned over) before then, however that happens (an
// exception unwinding a batch of them included), it closes the descriptor and removes the file.
// Move-only.
struct StagedBlock {
  StagedBlock() = default;
  StagedBlock(StagedBlock&& other) noexcept;
  StagedBlock& operator=(StagedBlock&& other) noexcept;
  ~StagedBlock() { Discard(); }

  // Closes fd and removes the temporary file when it still owns them; then owns nothing.
  void Discard() noexcept;

  FileOps* ops = nullptr;  // set while it owns the temporary file (and fd, when >= 0)
  int fd = -1;
  std::string temp_path;
  std::string final_path;
};

// First half of a safe write: creates dir/temp_name, writes header and payload and starts the
// kernel's write-back (a hint, so that the fsyncs of a batch of blocks find their data on its
// way to the disk). On failure the temporary file is closed and removed; from its creation on,
// *out owns it.
Outcome StageBlockFile(FileOps& ops, const std::string& dir, const std::string& temp_name,
                       const mstar_tier_key_t& key, const void* data, uint64_t size,
                       StagedBlock* out);
// Second half: fsyncs and closes the temporary file and renames it over the final name, so the
// block becomes visible only once its bytes are durable. On failure the temporary file is removed
// and an existing block under the key is unchanged. Always consumes staged (it owns nothing
// after; should this throw midway, staged still owns what is left and cleans it up).
Outcome CommitBlockFile(FileOps& ops, StagedBlock& staged);
// Fsyncs dir, making the renames before it durable.
Outcome SyncDirectory(FileOps& ops, const std::string& dir, const std::string& after);

// Reads dir/<key>.blk into data (size bytes, the size the caller stored) and checks it whole:
// header, sizes and the payload's checksum. MSTAR_ERR_DATA_LOSS: missing, truncated, oversized
// file, a bad header or a payload that does not match its checksum (data is then zeroed);
// MSTAR_ERR_IO: a call failed. Uses only ops' Open, ReadV and Close, so several reads may run at
// once.
Outcome ReadBlockFile(FileOps& ops, const std::string& dir, const mstar_tier_key_t& key, void* data,
                      uint64_t size);

// Reads and checks only the header of a block file (start-up index rebuild): the key must match
// the file name and the file size must be header + payload. On success *out_size is the payload
// size.
Outcome ReadBlockHeader(FileOps& ops, const std::string& path, const mstar_tier_key_t& key,
                        uint64_t file_size, uint64_t* out_size);

}  // namespace mstar::tier_disk
