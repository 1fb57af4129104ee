// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PosixFileOps: FileOps over the POSIX calls, retrying EINTR and short transfers.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "file_ops.h"

namespace mstar::tier_disk {
namespace {

class PosixFileOps final : public FileOps {
 public:
  int Open(const std::string& path, int flags, mode_t mode, int* out_fd) override {
    int fd;
    do {
      fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return errno;
    *out_fd = fd;
    return 0;
  }

  int Write(int fd, const void* data, size_t size) override {
    const auto* p = static_cast<const uint8_t*>(data);
    while (size > 0) {
      ssize_t n = ::write(fd, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      if (n == 0) return EIO;
      p += n;
      size -= static_cast<size_t>(n);
    }
    return 0;
  }

  int Read(int fd, void* data, size_t size, size_t* out_read) override {
    auto* p = static_cast<uint8_t*>(data);
    size_t total = 0;
    while (total < size) {
      ssize_t n = ::read(fd, p + total, size - total);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      if (n == 0) break;  // end of file
      total += static_cast<size_t>(n);
    }
    *out_read = total;
    return 0;
  }

  // One readv, which for a regular file on a local file system returns fewer bytes than asked
  // only at its end; a network or FUSE file system may cut a read short anywhere, so a short
  // read goes on with plain reads until end of file (a block read to its end costs one more
  // call, which returns 0). A block that looked truncated would be dropped as DATA_LOSS.
  int ReadV(int fd, const iovec* buffers, int count, size_t* out_read) override {
    ssize_t n;
    do {
      n = ::readv(fd, buffers, count);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return errno;
    *out_read = static_cast<size_t>(n);
    if (n == 0) return 0;
    size_t skip = *out_read;  // bytes of buffers[i] already read
    int i = 0;
    while (i < count && skip >= buffers[i].iov_len) skip -= buffers[i++].iov_len;
    for (; i < count; ++i, skip = 0) {
      size_t got = 0;
      if (int e = Read(fd, static_cast<char*>(buffers[i].iov_base) + skip,
                       buffers[i].iov_len - skip, &got))
        return e;
      *out_read += got;
      if (got < buffers[i].iov_len - skip) return 0;  // end of file
    }
    return 0;
  }

  int Fsync(int fd) override { return ::fsync(fd) == 0 ? 0 : errno; }
  void StartWriteback(int fd) override {
    ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);  // a hint: errors surface in Fsync
  }
  // Linux releases the descriptor even when close reports an error: never retry.
  int Close(int fd) override { return ::close(fd) == 0 ? 0 : errno; }
  int Rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  }
  int Unlink(const std::string& path) override { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

  int MakeDirs(const std::string& path) override {
    for (size_t pos = 1; pos <= path.size(); ++pos) {
      if (pos != path.size() && path[pos] != '/') continue;
      std::string prefix = path.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return errno;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  }

  int RemoveDir(const std::string& path) override { return ::rmdir(path.c_str()) == 0 ? 0 : errno; }

  int List(const std::string& dir, std::vector<std::string>* out_names) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return errno;
    out_names->clear();
    errno = 0;
    while (dirent* entry = ::readdir(d)) {
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
        out_names->emplace_back(entry->d_name);
      }
      errno = 0;
    }
    int error = errno;
    ::closedir(d);
    return error;
  }

  int Stat(const std::string& path, FileStat* out) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errno;
    out->size = static_cast<uint64_t>(st.st_size);
    out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return 0;
  }

  int StatVfs(const std::string& dir, uint64_t* out_free_bytes) override {
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) != 0) return errno;
    *out_free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    return 0;
  }
};

}  // namespace

std::unique_ptr<FileOps> MakePosixFileOps() {
  return std::make_unique<PosixFileOps>();
}

}  // namespace mstar::tier_disk
