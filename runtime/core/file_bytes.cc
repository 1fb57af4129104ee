// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/file_bytes.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace mstar {

namespace {

// The process's umask, read without changing it (umask(2) can only set it, which would race
// with other threads creating files): Linux shows it in /proc/self/status. 022 where it does not.
mode_t ProcessUmask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Umask:", 0) == 0)
      return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8) & 0777);
  }
  return 022;
}

}  // namespace

Result<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read " + path + ": " + std::strerror(errno));
  std::string bytes;
  std::string block(1 << 16, '\0');
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    bytes.append(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return IoError("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

Status WriteFileBytes(const std::string& path, std::span<const uint8_t> bytes) {
  std::string temp = path + ".XXXXXX.partial";
  const int fd = ::mkstemps(temp.data(), 8);
  if (fd < 0) return IoError("cannot create a file beside " + path + ": " + std::strerror(errno));
  auto failed = [&](const char* what, int error, bool open) {
    if (open) ::close(fd);
    ::unlink(temp.c_str());
    return IoError(std::string(what) + " " + temp + " failed: " + std::strerror(error));
  };
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return failed("writing", n < 0 ? errno : EIO, true);
    done += static_cast<size_t>(n);
  }
  // mkstemps makes the file its owner's only; an output file gets 0666 less the umask, as
  // open(2) gives it outside directories with a default ACL (not applied here). A file system
  // that cannot set the mode (fchmod fails) keeps the file as made: its bytes are whole.
  (void)::fchmod(fd, 0666 & ~ProcessUmask());
  if (::fsync(fd) != 0) return failed("fsync of", errno, true);
  if (::close(fd) != 0) return failed("closing", errno, false);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    return IoError("cannot rename " + temp + " to " + path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

}  // namespace mstar
