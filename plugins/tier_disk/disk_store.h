// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DiskStore: the blocks of one tier_disk instance in one directory, with an in-memory index of
// key -> size in least-recently-used order (a PUT or GET counts as a use; CONTAINS does not).
//
// The directory holds <key>.blk block files and an identity file naming the checkpoint the blocks
// belong to. Open() rebuilds the index from the directory: blocks written under a different
// identity, with no identity file, or when this instance has no identity, are removed; temporary files of interrupted writes and
// files whose header does not check out are removed; the rest are indexed oldest-write first.
// The directory belongs to one instance at a time.
//
// Thread-safety: every public method takes the store's mutex (Get: see there).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "block_file.h"
#include "file_ops.h"

namespace mstar::tier_disk {

struct DiskStoreOptions {
  std::string directory;
  uint64_t capacity_bytes = 0;  // 0: unbounded; counts payload bytes
  std::vector<uint8_t> identity;
  bool sync_directory = true;  // fsync the directory after each block's rename
};

// level is an MSTAR_LOG_* value.
using LogFn = std::function<void(uint32_t level, const std::string& message)>;

class DiskStore {
 public:
  DiskStore(std::unique_ptr<FileOps> ops, DiskStoreOptions options, LogFn log);

  // Creates the directory, applies the identity rule and rebuilds the index. A failure here
  // (the directory cannot be created or listed, the identity file cannot be written) is fatal to
  // the instance; the message names the path.
  Outcome Open();

  uint32_t Contains(const mstar_tier_key_t& key);
  // A GET: reads the block into data and checks it whole; a block that fails its checks is
  // removed (DATA_LOSS, data zeroed). The file is read outside the mutex, so several Gets run at
  // once; none may run concurrently with a PUT or Remove of the same key (tier_disk runs the GETs
  // of a run together and nothing else meanwhile).
  Outcome Get(const mstar_tier_key_t& key, void* data, uint64_t size);

  // Batched PUT. StagePut checks the op, makes room (evicting unpinned blocks) and writes the block
  // to a temporary file; a failure is returned at once. Otherwise it returns OK, the PUT is
  // pending, and *out (caller-owned, alive until CommitStaged returns) receives the PUT's outcome
  // when it is committed. CommitStaged fsyncs and renames every pending block in staging order, so
  // no block is visible before it is durable, then fsyncs the directory once when
  // sync_directory is set; if that fails, every block of the run is removed and fails. StagePut
  // commits the pending run first when the key is already pending or the run is full. Data
  // passed to StagePut must stay unchanged until CommitStaged returns.
  Outcome StagePut(const mstar_tier_key_t& key, const void* data, uint64_t size, Outcome* out);
  void CommitStaged();
  Outcome Remove(const mstar_tier_key_t& key);

  // Removes every block file, the identity file and (when then empty) the directory.
  void RemoveAll();

  // Payload bytes of the blocks held, and of the files of dropped ones not yet removed.
  uint64_t used_bytes();
  uint64_t block_count();
  const DiskStoreOptions& options() const { return options_; }
  // Whether the directory records this store's identity since Open: without it (files of another
  // identity stayed), a later start reuses none of the blocks.
  bool records_identity() const { return records_identity_; }

 private:
  struct Entry {
    mstar_tier_key_t key;
    uint64_t size;
    bool pinned = false;  // a pending PUT replaces it: never an eviction victim
  };
  struct Staged {
    mstar_tier_key_t key;
    uint64_t size;
    uint64_t replaced;  // size of the pinned block it replaces, 0 if none
    StagedBlock file;
    Outcome* out;
  };
  // A pending run holds at most this many blocks (open descriptors) and bytes.
  static constexpr size_t kMaxStagedBlocks = 64;
  static constexpr uint64_t kMaxStagedBytes = uint64_t{256} << 20;
  using Lru = std::list<Entry>;  // front: most recently used
  struct KeyHash {
    size_t operator()(const mstar_tier_key_t& key) const noexcept;
  };
  struct KeyEqual {
    bool operator()(const mstar_tier_key_t& a, const mstar_tier_key_t& b) const noexcept;
  };

  std::string BlockPath(const mstar_tier_key_t& key) const;
  std::string IdentityText() const;
  // Reads the identity file into out: 0, or the errno of opening or reading it (ENOENT: absent).
  int ReadIdentityFile(std::string* out);
  Outcome WriteIdentityFile();
  // Forgets a block; with unlink_file, removes its file too. A file that cannot be removed
  // becomes an orphan: still on disk, so its bytes still count (used_bytes, the capacity), and
  // removed again before the next eviction (RetryOrphansLocked).
  void Drop(Lru::iterator it, bool unlink_file);
  // Removes the file at path; one that cannot be removed becomes an orphan of size bytes.
  // Returns the unlink's error (0: removed, or gone already).
  int RemoveOrOrphan(const std::string& path, uint64_t size);
  // The bytes a block file at path counts for, as a block does: its size less the header (0
  // when it cannot be read or is shorter).
  uint64_t PayloadBytesOf(const std::string& path);
  // At startup: removes what (a leftover temp file, a damaged block) at path, or keeps it as an
  // orphan of its payload bytes, logged.
  void RemoveAtStartup(const std::string& path, const char* what);
  void RetryOrphansLocked();
  // The bytes of the orphans at path or at a pending PUT's block path: a commit's rename
  // replaces those files, so they stop counting.
  uint64_t OrphanBytesReplacedLocked(const std::string& path) const;
  // Drops the orphan at path (a block file was renamed over it).
  void ForgetOrphan(const std::string& path);
  // The least recently used block a PUT may evict (neither pinned nor existing, the block it
  // replaces; lru_.end() for none), or lru_.end().
  Lru::iterator EvictionVictim(Lru::iterator existing);
  void CommitStagedLocked();
  bool IsStaged(const mstar_tier_key_t& key) const;

  std::unique_ptr<FileOps> ops_;
  DiskStoreOptions options_;
  LogFn log_;
  std::mutex mutex_;
  Lru lru_;
  std::unordered_map<mstar_tier_key_t, Lru::iterator, KeyHash, KeyEqual> index_;
  uint64_t used_ = 0;
  bool records_identity_ = false;  // set by Open
  struct Orphan {
    std::string path;
    uint64_t size;
  };
  std::vector<Orphan> orphans_;  // dropped blocks whose files could not be removed
  uint64_t orphan_bytes_ = 0;
  std::vector<Staged> staged_;
  uint64_t staged_bytes_ = 0;     // payload bytes of the pending PUTs
  uint64_t staged_replaced_ = 0;  // bytes of the pinned blocks they replace
  uint64_t temp_seq_ = 0;
};

}  // namespace mstar::tier_disk
