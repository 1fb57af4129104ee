// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "disk_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mstar/host.h"
#include "mstar/sdk/bytes.hpp"

namespace mstar::tier_disk {
namespace {

constexpr const char* kIdentityFile = "tier_identity";

// The identity file is written under this name first, then renamed.
std::string IdentityTempName() {
  return std::string(kIdentityFile) + kTempMarker + "identity";
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  return sdk::HexString(bytes.data(), bytes.size());
}

Outcome Failed(const char* call, const std::string& path, int error) {
  return {CodeForErrno(error),
          std::string("tier_disk: ") + call + " of " + path + " failed: " + std::strerror(error)};
}

}  // namespace

size_t DiskStore::KeyHash::operator()(const mstar_tier_key_t& key) const noexcept {
  size_t h = 0;
  std::memcpy(&h, key.bytes, sizeof(h));
  return h;
}

bool DiskStore::KeyEqual::operator()(const mstar_tier_key_t& a,
                                     const mstar_tier_key_t& b) const noexcept {
  return std::memcmp(a.bytes, b.bytes, sizeof(a.bytes)) == 0;
}

DiskStore::DiskStore(std::unique_ptr<FileOps> ops, DiskStoreOptions options, LogFn log)
    : ops_(std::move(ops)), options_(std::move(options)), log_(std::move(log)) {}

std::string DiskStore::BlockPath(const mstar_tier_key_t& key) const {
  return options_.directory + "/" + KeyHex(key) + kBlockSuffix;
}

std::string DiskStore::IdentityText() const {
  return "mstar tier_disk " + std::to_string(kBlockFormatVersion) + "\nidentity " +
         Hex(options_.identity) + "\n";
}

int DiskStore::ReadIdentityFile(std::string* out) {
  const std::string path = options_.directory + "/" + kIdentityFile;
  int fd = -1;
  if (int e = ops_->Open(path, O_RDONLY, 0, &fd)) return e;
  std::string text(4096, '\0');
  size_t got = 0;
  int e = ops_->Read(fd, text.data(), text.size(), &got);
  ops_->Close(fd);
  if (e != 0) return e;
  text.resize(got);
  *out = text;
  return 0;
}

Outcome DiskStore::WriteIdentityFile() {
  const std::string path = options_.directory + "/" + kIdentityFile;
  const std::string temp = options_.directory + "/" + IdentityTempName();
  const std::string text = IdentityText();
  int fd = -1;
  if (int e = ops_->Open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fd)) {
    return Failed("open", temp, e);
  }
  int e = ops_->Write(fd, text.data(), text.size());
  if (e == 0) e = ops_->Fsync(fd);
  int close_error = ops_->Close(fd);
  if (e == 0) e = close_error;
  if (e == 0) e = ops_->Rename(temp, path);
  if (e != 0) {
    ops_->Unlink(temp);
    return Failed("writing the identity file", path, e);
  }
  return {};
}

Outcome DiskStore::Open() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string& dir = options_.directory;
  if (int e = ops_->MakeDirs(dir)) return Failed("creating the directory", dir, e);

  std::string stored;
  // One that cannot be read (not one that is not there) fails the start: taken for none, every
  // block would be removed, for what may be a passing error.
  const int identity_error = ReadIdentityFile(&stored);
  if (identity_error != 0 && identity_error != ENOENT)
    return Failed("reading the identity file", dir + "/" + kIdentityFile, identity_error);
  const bool has_identity = identity_error == 0;
  // Without a checkpoint identity nothing says whose blocks these are: never reuse them. Nor
  // those of a store that does not make its renames durable (sync_directory off): after a crash
  // a key's file may be an older block than the last one written, or a removed one back.
  const bool anonymous = options_.identity.empty();
  const bool durable = options_.sync_directory;
  const bool same = !anonymous && durable && has_identity && stored == IdentityText();

  std::vector<std::string> names;
  if (int e = ops_->List(dir, &names)) return Failed("listing", dir, e);

  struct Found {
    mstar_tier_key_t key;
    uint64_t size;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  uint64_t wiped = 0, stuck = 0;
  std::string first_stuck;  // the first block file of another identity that stays, and why
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    if (IsBlockTempFileName(name) || name == IdentityTempName()) {
      RemoveAtStartup(path, "an interrupted write");
      continue;
    }
    mstar_tier_key_t key{};
    if (!ParseBlockFileName(name, &key)) continue;  // not ours
    if (!same) {
      const int e = RemoveOrOrphan(path, PayloadBytesOf(path));  // one not removed counts
      if (e == 0) {
        ++wiped;
      } else if (stuck++ == 0) {
        first_stuck = path + ": " + std::strerror(e);
      }
      continue;
    }
    FileStat st;
    uint64_t size = 0;
    Outcome header;
    if (int e = ops_->Stat(path, &st)) {
      header = Failed("stat", path, e);
    } else {
      header = ReadBlockHeader(*ops_, path, key, st.size, &size);
    }
    if (header.code == MSTAR_ERR_DATA_LOSS) {
      log_(MSTAR_LOG_WARN, header.message + "; removing it");
      RemoveAtStartup(path, "a damaged block");
      continue;
    }
    if (!header.ok()) {
      // An I/O error says nothing of the block: the file stays, unread and not counted (as
      // counted, it would be the first file removed for room), for a later start.
      log_(MSTAR_LOG_WARN, header.message + "; leaving the file in place, unread");
      continue;
    }
    found.push_back({key, size, st.mtime_ns});
  }
  if (!same && (has_identity || wiped > 0)) {
    // The identity text starts with the block format version: an older build's blocks are
    // another format, never read.
    const std::string version_line = IdentityText().substr(0, IdentityText().find('\n') + 1);
    const bool other_format =
        has_identity && stored.compare(0, version_line.size(), version_line) != 0;
    const std::string why =
        anonymous  ? " (no checkpoint identity was given, so blocks are not reused)"
        : !durable ? " (a store that removes its files when it ends does not make them durable, "
                     "so blocks it left are not reused)"
        : other_format ? " holds blocks of another block file format (this build reads version " +
                             std::to_string(kBlockFormatVersion) + ")"
        : has_identity ? " holds blocks of another checkpoint identity"
                       : " has no identity file";
    log_(MSTAR_LOG_INFO,
         "tier_disk: " + dir + why + "; removed " + std::to_string(wiped) + " block files");
  }
  if (!same && stuck > 0) {
    // Those blocks stay on disk. Under this identity's file a later start would index them as
    // this identity's blocks: the directory records no identity instead, so no block in it is
    // reused after a restart until they are gone (each start tries to remove them again).
    log_(MSTAR_LOG_WARN, "tier_disk: could not remove " + std::to_string(stuck) +
                             " block files not of this identity in " + dir +
                             " (first: " + first_stuck +
                             "); the directory records no identity, so no block "
                             "in it is reused after a restart until they are removed");
  }
  // The directory records the identity only for blocks a later start may reuse: kept by a
  // durable store, all of another identity removed. Otherwise it records none, so that a later
  // start (durable or not) reuses nothing this store leaves, a crash included.
  records_identity_ = durable && stuck == 0;
  if (!records_identity_) {
    const std::string identity = dir + "/" + kIdentityFile;
    const int e = ops_->Unlink(identity);
    if (e != 0 && e != ENOENT) return Failed("unlink", identity, e);
  } else if (!same) {
    Outcome written = WriteIdentityFile();
    if (!written.ok()) return written;
  }

  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  for (const Found& f : found) {
    lru_.push_front(Entry{f.key, f.size});
    index_.emplace(f.key, lru_.begin());
    used_ += f.size;
  }
  uint64_t evicted = 0;
  // What it could not remove above counts too: the directory holds no more than the capacity.
  // An eviction whose file stays stops it (as in StagePut): the next would likely fail alike, and
  // going on would turn every readable block into an orphan.
  while (options_.capacity_bytes != 0 && used_ + orphan_bytes_ > options_.capacity_bytes &&
         !lru_.empty()) {
    const size_t orphans = orphans_.size();
    Drop(std::prev(lru_.end()), true);
    ++evicted;
    if (orphans_.size() > orphans) break;
  }
  if (!found.empty()) {
    log_(MSTAR_LOG_INFO, "tier_disk: reusing " + std::to_string(found.size() - evicted) +
                             " blocks (" + std::to_string(used_) + " bytes) in " + dir);
  }
  return {};
}

uint32_t DiskStore::Contains(const mstar_tier_key_t& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  CommitStagedLocked();  // ops take effect in the order they were made
  return index_.count(key) != 0 ? MSTAR_OK : MSTAR_ERR_NOT_FOUND;
}

bool DiskStore::IsStaged(const mstar_tier_key_t& key) const {
  KeyEqual equal;
  return std::any_of(staged_.begin(), staged_.end(),
                     [&](const Staged& s) { return equal(s.key, key); });
}

Outcome DiskStore::StagePut(const mstar_tier_key_t& key, const void* data, uint64_t size,
                            Outcome* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t capacity = options_.capacity_bytes;
  if (capacity != 0 && size > capacity) {
    return {MSTAR_ERR_RESOURCE_EXHAUSTED,
            "tier_disk: block " + KeyHex(key) + " of " + std::to_string(size) +
                " bytes exceeds capacity_bytes " + std::to_string(capacity)};
  }
  if (size > kMaxBlockPayload) {
    return {MSTAR_ERR_RESOURCE_EXHAUSTED, "tier_disk: block " + KeyHex(key) + " of " +
                                              std::to_string(size) +
                                              " bytes exceeds the largest block it stores (" +
                                              std::to_string(kMaxBlockPayload) + " bytes)"};
  }
  if (size != 0 && data == nullptr) {
    return {MSTAR_ERR_INVALID_ARGUMENT,
            "tier_disk: PUT of block " + KeyHex(key) + " with NULL data"};
  }
  // After this, the pending blocks alone fit in the capacity, so evicting every unpinned block
  // below always makes room.
  if (IsStaged(key) || staged_.size() >= kMaxStagedBlocks ||
      staged_bytes_ + size > kMaxStagedBytes ||
      (capacity != 0 && staged_bytes_ + size > capacity)) {
    CommitStagedLocked();
  }
  auto existing = index_.find(key);
  const uint64_t replaced = existing == index_.end() ? 0 : existing->second->size;
  const std::string path = BlockPath(key);
  auto over = [&] {
    // An orphan at this block's path or a pending one's goes when the rename replaces it.
    const uint64_t orphans_left = orphan_bytes_ - OrphanBytesReplacedLocked(path);
    return capacity != 0 &&
           used_ + orphans_left - staged_replaced_ - replaced + staged_bytes_ + size > capacity;
  };
  if (over()) RetryOrphansLocked();
  while (over()) {
    auto victim = EvictionVictim(existing == index_.end() ? lru_.end() : existing->second);
    // Without orphans, evictions always make the room. With them, or once an eviction could not
    // remove its file (the next would likely fail alike: better refuse this PUT than empty the
    // index of blocks still readable), the PUT is refused.
    const size_t orphans = orphans_.size();
    if (victim != lru_.end()) Drop(victim, true);
    if (victim == lru_.end() || orphans_.size() > orphans) {
      return {MSTAR_ERR_RESOURCE_EXHAUSTED,
              "tier_disk: no room for a block of " + std::to_string(size) +
                  " bytes: " + std::to_string(orphan_bytes_) +
                  " bytes of capacity_bytes are held by " + std::to_string(orphans_.size()) +
                  " block files it could not remove (first: " + orphans_.front().path + ")"};
    }
  }
  uint64_t free_bytes = 0;
  if (int e = ops_->StatVfs(options_.directory, &free_bytes)) {
    return Failed("statvfs", options_.directory, e);
  }
  if (free_bytes < kBlockHeaderSize + size) {
    return {MSTAR_ERR_RESOURCE_EXHAUSTED, "tier_disk: disk full: " + std::to_string(free_bytes) +
                                              " bytes free in " + options_.directory + ", need " +
                                              std::to_string(kBlockHeaderSize + size)};
  }
  const std::string temp_name =
      KeyHex(key) + kTempMarker + std::to_string(::getpid()) + "." + std::to_string(temp_seq_++);
  StagedBlock file;  // owns the temporary file: should anything below throw, it is removed
  Outcome outcome = StageBlockFile(*ops_, options_.directory, temp_name, key, data, size, &file);
  if (!outcome.ok()) return outcome;
  *out = {MSTAR_ERR_INTERNAL, "tier_disk: PUT not committed"};
  staged_.push_back(Staged{key, size, replaced, std::move(file), out});
  // Nothing throws from here on.
  if (existing != index_.end()) existing->second->pinned = true;
  staged_bytes_ += size;
  staged_replaced_ += replaced;
  return {};
}

void DiskStore::CommitStaged() {
  std::lock_guard<std::mutex> lock(mutex_);
  CommitStagedLocked();
}

void DiskStore::CommitStagedLocked() {
  if (staged_.empty()) return;
  // Should anything below throw (out of memory), the blocks of the run not yet committed go with
  // run: each StagedBlock closes and removes its temporary file, and their PUTs keep the INTERNAL
  // outcome StagePut set.
  std::vector<Staged> run = std::move(staged_);
  staged_.clear();
  staged_bytes_ = 0;
  staged_replaced_ = 0;
  // Nothing is evicted while this runs: the blocks the run replaces lose their pins first, so
  // that none stays pinned should it throw.
  for (const Staged& s : run) {
    if (auto existing = index_.find(s.key); existing != index_.end()) {
      existing->second->pinned = false;
    }
  }
  bool any_renamed = false;
  for (Staged& s : run) {
    // What may allocate (the LRU node, the index entry) is made before the rename, so that a
    // block file renamed into place is always indexed; a new key's entry points at lru_.end()
    // until then, and is erased if the commit fails or throws.
    Lru node;
    node.push_front(Entry{s.key, s.size});
    auto [slot, fresh] = index_.try_emplace(s.key, lru_.end());
    try {
      *s.out = CommitBlockFile(*ops_, s.file);
    } catch (...) {
      if (fresh) index_.erase(slot);
      throw;
    }
    if (!s.out->ok()) {  // the previous block, if any, stays
      if (fresh) index_.erase(slot);
      continue;
    }
    any_renamed = true;
    ForgetOrphan(s.file.final_path);  // the rename replaced that file
    if (!fresh) {                     // the block it replaced, whose file the rename replaced
      used_ -= slot->second->size;
      lru_.erase(slot->second);
    }
    lru_.splice(lru_.begin(), node);
    slot->second = lru_.begin();
    used_ += s.size;
  }
  if (!any_renamed || !options_.sync_directory) return;
  // Make the renames durable; if that fails, none of the run's blocks may be trusted.
  Outcome synced = SyncDirectory(*ops_, options_.directory, run.front().file.final_path);
  if (synced.ok()) return;
  for (Staged& s : run) {
    if (!s.out->ok()) continue;
    // Dropped with its file: a file that cannot be removed stays counted, as an orphan.
    auto it = index_.find(s.key);
    if (it != index_.end()) Drop(it->second, true);
    *s.out = synced;
  }
}

Outcome DiskStore::Get(const mstar_tier_key_t& key, void* data, uint64_t size) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    CommitStagedLocked();  // ops take effect in order
    auto found = index_.find(key);
    if (found == index_.end()) return {MSTAR_ERR_NOT_FOUND, ""};
    if (found->second->size != size) {
      return {MSTAR_ERR_INVALID_ARGUMENT, "tier_disk: GET of " + std::to_string(size) +
                                              " bytes of block " + KeyHex(key) + ", which has " +
                                              std::to_string(found->second->size)};
    }
    if (size != 0 && data == nullptr) {
      return {MSTAR_ERR_INVALID_ARGUMENT,
              "tier_disk: GET of block " + KeyHex(key) + " with NULL data"};
    }
  }
  // Block files are replaced by rename and never written in place, so an open file reads whole.
  Outcome outcome = ReadBlockFile(*ops_, options_.directory, key, data, size);
  if (outcome.code != MSTAR_ERR_DATA_LOSS && !outcome.ok()) return outcome;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = index_.find(key);
  if (found == index_.end()) return outcome;  // a concurrent GET of the key dropped it
  if (outcome.ok()) {
    lru_.splice(lru_.begin(), lru_, found->second);
  } else {
    Drop(found->second, true);
  }
  return outcome;
}

Outcome DiskStore::Remove(const mstar_tier_key_t& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  CommitStagedLocked();
  auto found = index_.find(key);
  if (found == index_.end()) return {MSTAR_ERR_NOT_FOUND, ""};
  const std::string path = BlockPath(key);
  int e = ops_->Unlink(path);
  if (e != 0 && e != ENOENT) return Failed("unlink", path, e);
  Drop(found->second, false);
  return {};
}

void DiskStore::RemoveAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  CommitStagedLocked();
  while (!lru_.empty()) Drop(lru_.begin(), true);
  RetryOrphansLocked();
  ops_->Unlink(options_.directory + "/" + kIdentityFile);
  ops_->RemoveDir(options_.directory);  // fails harmlessly when other files remain
}

uint64_t DiskStore::used_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_ + orphan_bytes_;
}

uint64_t DiskStore::block_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.size();
}

int DiskStore::RemoveOrOrphan(const std::string& path, uint64_t size) {
  const int e = ops_->Unlink(path);
  if (e == 0 || e == ENOENT) return 0;
  orphans_.push_back({path, size});
  orphan_bytes_ += size;
  return e;
}

uint64_t DiskStore::PayloadBytesOf(const std::string& path) {
  FileStat st;
  if (ops_->Stat(path, &st) != 0) return 0;
  return st.size > kBlockHeaderSize ? st.size - kBlockHeaderSize : 0;
}

void DiskStore::RemoveAtStartup(const std::string& path, const char* what) {
  if (int e = RemoveOrOrphan(path, PayloadBytesOf(path))) {
    log_(MSTAR_LOG_WARN, std::string("tier_disk: could not remove ") + what + " " + path + ": " +
                             std::strerror(e) +
                             "; its bytes count against capacity_bytes until it is removed");
  }
}

void DiskStore::Drop(Lru::iterator it, bool unlink_file) {
  if (unlink_file) {
    const std::string path = BlockPath(it->key);
    if (int e = RemoveOrOrphan(path, it->size)) {
      log_(MSTAR_LOG_WARN, "tier_disk: could not remove " + path + ": " + std::strerror(e) +
                               "; its bytes count against capacity_bytes until it is removed");
    }
  }
  used_ -= it->size;
  index_.erase(it->key);
  lru_.erase(it);
}

void DiskStore::ForgetOrphan(const std::string& path) {
  std::erase_if(orphans_, [&](const Orphan& orphan) {
    if (orphan.path != path) return false;
    orphan_bytes_ -= orphan.size;
    return true;
  });
}

uint64_t DiskStore::OrphanBytesReplacedLocked(const std::string& path) const {
  uint64_t bytes = 0;
  for (const Orphan& orphan : orphans_) {
    const bool pending = std::any_of(staged_.begin(), staged_.end(), [&](const Staged& s) {
      return s.file.final_path == orphan.path;
    });
    if (orphan.path == path || pending) bytes += orphan.size;
  }
  return bytes;
}

void DiskStore::RetryOrphansLocked() {
  std::erase_if(orphans_, [&](const Orphan& orphan) {
    int e = ops_->Unlink(orphan.path);
    if (e != 0 && e != ENOENT) return false;
    orphan_bytes_ -= orphan.size;
    return true;
  });
}

DiskStore::Lru::iterator DiskStore::EvictionVictim(Lru::iterator existing) {
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    auto victim = std::prev(it.base());
    if (!victim->pinned && victim != existing) return victim;
  }
  return lru_.end();
}

}  // namespace mstar::tier_disk
