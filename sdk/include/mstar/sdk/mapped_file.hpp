// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// MappedFile: a whole file mapped read-only into memory (POSIX mmap), for weight readers.
// Ownership: the object owns the mapping and unmaps it on destruction; pointers into data() are
// valid while it lives. Movable, not copyable. Threading: immutable after Open, so any thread may
// read it. Open throws mstar::sdk::Error (NOT_FOUND when the file cannot be opened,
// INVALID_ARGUMENT when it cannot be mapped), naming the path.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "mstar/sdk/error.hpp"

namespace mstar::sdk {

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }
  MappedFile& operator=(MappedFile&& other) noexcept {
    if (this != &other) {
      Unmap();
      path_ = std::move(other.path_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() { Unmap(); }

  static MappedFile Open(const std::string& path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; it is refused
    // below like any other file that is not a regular one.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw NotFound(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw InvalidArgument(path + ": not a regular file");
    }
    MappedFile file;
    file.path_ = path;
    file.size_ = static_cast<uint64_t>(st.st_size);
    if (file.size_ > 0) {
      void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int error = errno;
        ::close(fd);
        throw InvalidArgument(path + ": cannot map: " + std::strerror(error));
      }
      file.data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return file;
  }

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  void Unmap() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }

  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace mstar::sdk
