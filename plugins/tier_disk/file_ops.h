// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// FileOps: every file-system call tier_disk makes, behind one small interface so that a
// fault-injecting implementation can stand in for the real one (PosixFileOps).
//
// Contract: each call returns 0 on success or an errno value on failure and never throws. Write
// writes all size bytes or fails; Read reads until size bytes or end of file and reports how many
// it got; ReadV does the same over several buffers in order. Open, Read, ReadV and Close may be
// called from several threads at once (tier_disk reads a run of GETs on two threads); the other
// calls come from one thread at a time.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mstar::tier_disk {

struct FileStat {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

class FileOps {
 public:
  virtual ~FileOps() = default;

  virtual int Open(const std::string& path, int flags, mode_t mode, int* out_fd) = 0;
  virtual int Write(int fd, const void* data, size_t size) = 0;
  virtual int Read(int fd, void* data, size_t size, size_t* out_read) = 0;
  // Fills the buffers in order from the file position until they are full or the file ends; one
  // system call where the implementation can (PosixFileOps: one readv, and plain reads after it
  // only when it comes back short). By default one Read per
  // buffer, so a wrapper that counts Read calls (FaultyFileOps) sees each buffer as a read.
  virtual int ReadV(int fd, const iovec* buffers, int count, size_t* out_read) {
    *out_read = 0;
    for (int i = 0; i < count; ++i) {
      size_t got = 0;
      if (int e = Read(fd, buffers[i].iov_base, buffers[i].iov_len, &got)) return e;
      *out_read += got;
      if (got != buffers[i].iov_len) break;  // end of file
    }
    return 0;
  }
  virtual int Fsync(int fd) = 0;
  // A hint: start writing fd's dirty pages to the disk without waiting (PosixFileOps:
  // sync_file_range). Never fails; durability still needs Fsync. Default: nothing.
  virtual void StartWriteback(int fd) { (void)fd; }
  virtual int Close(int fd) = 0;
  virtual int Rename(const std::string& from, const std::string& to) = 0;
  virtual int Unlink(const std::string& path) = 0;
  // Creates path and any missing parents; an existing directory is success.
  virtual int MakeDirs(const std::string& path) = 0;
  virtual int RemoveDir(const std::string& path) = 0;
  // The names (not paths) of the entries of dir, without "." and "..".
  virtual int List(const std::string& dir, std::vector<std::string>* out_names) = 0;
  virtual int Stat(const std::string& path, FileStat* out) = 0;
  // Bytes available to an unprivileged writer on the file system holding dir.
  virtual int StatVfs(const std::string& dir, uint64_t* out_free_bytes) = 0;
};

std::unique_ptr<FileOps> MakePosixFileOps();

// Which operation a FaultyFileOps breaks, and how. Operation names: open, write, read, fsync,
// close, rename, unlink, mkdir, rmdir, list, stat, statvfs.
struct FaultPlan {
  std::string op;                  // the operation to break
  uint64_t fail_after = 0;         // matching calls that succeed before the first failure
  uint64_t fail_count = 1;         // consecutive matching calls that fail; 0: all from then on
  int error = 5;                   // errno reported (default EIO)
  bool truncate_on_write = false;  // a failing write writes half its bytes and reports success
  bool at_startup = false;         // armed before start-up (else only after it)
};

// True when name is one of the operation names above.
bool IsFaultableOp(const std::string& name);

// Wraps base; counts only calls made after Arm() (made after start-up unless the plan says
// at_startup).
class FaultyFileOps final : public FileOps {
 public:
  FaultyFileOps(std::unique_ptr<FileOps> base, FaultPlan plan)
      : base_(std::move(base)), plan_(std::move(plan)) {}

  void Arm() { armed_ = true; }
  uint64_t faults_injected() const { return injected_.load(std::memory_order_relaxed); }

  int Open(const std::string& path, int flags, mode_t mode, int* out_fd) override;
  int Write(int fd, const void* data, size_t size) override;
  int Read(int fd, void* data, size_t size, size_t* out_read) override;
  int Fsync(int fd) override;
  // Forwarded, never faulted nor counted (it cannot fail).
  void StartWriteback(int fd) override { base_->StartWriteback(fd); }
  int Close(int fd) override;
  int Rename(const std::string& from, const std::string& to) override;
  int Unlink(const std::string& path) override;
  int MakeDirs(const std::string& path) override;
  int RemoveDir(const std::string& path) override;
  int List(const std::string& dir, std::vector<std::string>* out_names) override;
  int Stat(const std::string& path, FileStat* out) override;
  int StatVfs(const std::string& dir, uint64_t* out_free_bytes) override;

 private:
  // Whether this call of op fails.
  bool Trip(const char* op);

  std::unique_ptr<FileOps> base_;
  FaultPlan plan_;
  bool armed_ = false;  // set before any other thread uses this
  std::atomic<uint64_t> seen_{0};
  std::atomic<uint64_t> injected_{0};
};

}  // namespace mstar::tier_disk
