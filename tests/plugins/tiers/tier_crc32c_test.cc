// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_disk's block checksum (plugins/tier_disk/crc32c.cc, compiled into this test): the standard
// CRC-32C values, and the SSE4.2 path agreeing with the table on every length and alignment.
#include "crc32c.h"

#include <gtest/gtest.h>

#include <string>

#include "tier_harness.h"

namespace mstar::tier_disk {
namespace {

TEST(TierCrc32c, StandardCheckValues) {
  const std::string check = "123456789";
  EXPECT_EQ(Crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
  const std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(TierCrc32c, FastPathMatchesTheTableAtEveryLengthAndOffset) {
  std::vector<uint8_t> bytes = test::Pattern(300000 + 16, 11);
  for (size_t offset = 0; offset < 8; ++offset) {
    // Below, at and above the sizes where the fast paths take over (three crc32 streams from
    // 3072 bytes; carry-less folding beside them from 3968 bytes, where the CPU has it), and
    // sizes that leave every kind of tail.
    for (size_t size : {0,    1,    7,    8,    9,     15,          63,     64,          65,
                        1000, 3071, 3072, 3073, 3100,  3967,        3968,   3969,        4096,
                        4215, 4216, 4217, 5003, 65536, 65536 + 127, 262144, 262144 + 64, 300000}) {
      EXPECT_EQ(Crc32c(bytes.data() + offset, size), Crc32cPortable(bytes.data() + offset, size))
          << "offset " << offset << " size " << size;
    }
  }
  // A single flipped bit changes the checksum.
  uint32_t before = Crc32c(bytes.data(), bytes.size());
  bytes[2000] ^= 0x04;
  EXPECT_NE(Crc32c(bytes.data(), bytes.size()), before);
}

}  // namespace
}  // namespace mstar::tier_disk
