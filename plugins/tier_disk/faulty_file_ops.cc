// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// FaultyFileOps: forwards to the real FileOps except for the planned failures.
#include <cstring>

#include "file_ops.h"

namespace mstar::tier_disk {

bool IsFaultableOp(const std::string& name) {
  static const char* const kOps[] = {"open",   "write",   "read",  "fsync", "close",
                                     "rename", "unlink",  "mkdir", "rmdir", "list",
                                     "stat",   "statvfs", "any"};
  for (const char* op : kOps) {
    if (name == op) return true;
  }
  return false;
}

bool FaultyFileOps::Trip(const char* op) {
  if (!armed_ || (plan_.op != op && plan_.op != "any")) return false;
  const uint64_t index = seen_.fetch_add(1, std::memory_order_relaxed);
  if (index < plan_.fail_after) return false;
  if (plan_.fail_count != 0 && index - plan_.fail_after >= plan_.fail_count) return false;
  injected_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

int FaultyFileOps::Open(const std::string& path, int flags, mode_t mode, int* out_fd) {
  if (Trip("open")) return plan_.error;
  return base_->Open(path, flags, mode, out_fd);
}

int FaultyFileOps::Write(int fd, const void* data, size_t size) {
  if (Trip("write")) {
    if (!plan_.truncate_on_write) return plan_.error;
    // A torn write the operating system acknowledged: only the first half reaches the file.
    return base_->Write(fd, data, size / 2);
  }
  return base_->Write(fd, data, size);
}

int FaultyFileOps::Read(int fd, void* data, size_t size, size_t* out_read) {
  if (Trip("read")) return plan_.error;
  return base_->Read(fd, data, size, out_read);
}

int FaultyFileOps::Fsync(int fd) {
  if (Trip("fsync")) return plan_.error;
  return base_->Fsync(fd);
}

int FaultyFileOps::Close(int fd) {
  if (Trip("close")) {
    base_->Close(fd);  // a failing close still releases the descriptor (as on Linux)
    return plan_.error;
  }
  return base_->Close(fd);
}

int FaultyFileOps::Rename(const std::string& from, const std::string& to) {
  if (Trip("rename")) return plan_.error;
  return base_->Rename(from, to);
}

int FaultyFileOps::Unlink(const std::string& path) {
  if (Trip("unlink")) return plan_.error;
  return base_->Unlink(path);
}

int FaultyFileOps::MakeDirs(const std::string& path) {
  if (Trip("mkdir")) return plan_.error;
  return base_->MakeDirs(path);
}

int FaultyFileOps::RemoveDir(const std::string& path) {
  if (Trip("rmdir")) return plan_.error;
  return base_->RemoveDir(path);
}

int FaultyFileOps::List(const std::string& dir, std::vector<std::string>* out_names) {
  if (Trip("list")) return plan_.error;
  return base_->List(dir, out_names);
}

int FaultyFileOps::Stat(const std::string& path, FileStat* out) {
  if (Trip("stat")) return plan_.error;
  return base_->Stat(path, out);
}

int FaultyFileOps::StatVfs(const std::string& dir, uint64_t* out_free_bytes) {
  if (Trip("statvfs")) return plan_.error;
  return base_->StatVfs(dir, out_free_bytes);
}

}  // namespace mstar::tier_disk
