// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// PosixFileOps::ReadV keeps the FileOps contract (read until the buffers are full or the end of
// the file) when a read returns less than asked before the end, as a network or FUSE file system
// may. A pipe stands in for such a file: a read returns what the writer has written so far.
#include <sys/ioctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "file_ops.h"

namespace mstar::tier_disk {
namespace {

TEST(PosixFileOps, AShortReadvGoesOnUntilTheBuffersAreFullOrTheEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string head = "header....", body = "payload of the block.";
  ASSERT_EQ(::write(fds[1], head.data(), head.size()), static_cast<ssize_t>(head.size()));
  // The rest is written once the reader has taken the head: its readv saw only the head.
  std::thread writer([&] {
    int left = 1;
    while (::ioctl(fds[0], FIONREAD, &left) == 0 && left > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(::write(fds[1], body.data(), body.size()), static_cast<ssize_t>(body.size()));
    ::close(fds[1]);  // the end of the "file"
  });
  char first[6], second[64];  // the head splits across the first buffer and the second
  iovec buffers[] = {{first, sizeof(first)}, {second, sizeof(second)}};
  size_t got = 0;
  EXPECT_EQ(MakePosixFileOps()->ReadV(fds[0], buffers, 2, &got), 0);
  writer.join();
  ::close(fds[0]);
  ASSERT_EQ(got, head.size() + body.size());
  EXPECT_EQ(std::string(first, sizeof(first)) + std::string(second, got - sizeof(first)),
            head + body);
}

}  // namespace
}  // namespace mstar::tier_disk
