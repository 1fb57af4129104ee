// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_disk's block file format, version 2 (plugins/tier_disk/block_file.h): the header holds
// XXH3-128 of the payload and XXH3-64 of the header (checked here against libxxhash's plain
// entry points, so the plugin's dispatched ones must agree with them), any damaged byte or
// truncation is DATA_LOSS with the destination zeroed, and a version-1 file (CRC-32C) is never
// read as data: DATA_LOSS on GET, dropped at start-up, and a version-1 directory is wiped.
#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "host/host_api.h"
#include "support/test_support.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

namespace fs = std::filesystem;

constexpr size_t kHeader = 80;
constexpr size_t kPayloadHashAt = 56;
constexpr size_t kHeaderHashAt = 72;

uint64_t Load64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof(v));
  return v;
}

// Bitwise CRC-32C, only to write version-1 files as the previous format wrote them.
uint32_t Crc32c(const void* data, size_t size) {
  uint32_t crc = ~0u;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

// A well-formed version-1 block file: 64-byte header, CRC-32C of the payload and of the header.
std::string VersionOneFile(uint64_t key, const std::vector<uint8_t>& payload) {
  std::string h(64, '\0');
  std::memcpy(h.data(), "MSTRTBLK", 8);
  const uint32_t version = 1, header_size = 64;
  std::memcpy(h.data() + 8, &version, 4);
  std::memcpy(h.data() + 12, &header_size, 4);
  std::memcpy(h.data() + 16, KeyOf(key).bytes, 32);
  const uint64_t size = payload.size();
  std::memcpy(h.data() + 48, &size, 8);
  const uint32_t payload_crc = Crc32c(payload.data(), payload.size());
  std::memcpy(h.data() + 56, &payload_crc, 4);
  const uint32_t header_crc = Crc32c(h.data(), 60);
  std::memcpy(h.data() + 60, &header_crc, 4);
  return h + std::string(payload.begin(), payload.end());
}

class TierDiskFormatTest : public ::testing::Test {
 protected:
  std::unique_ptr<TierHarness> Make(const std::string& extra = "") {
    auto tier =
        TierHarness::Create("tier_disk", "directory = \"" + blocks_ + "\"\n" + extra, "ckpt-A");
    EXPECT_TRUE(tier.ok()) << tier.status().ToString();
    return tier.ok() ? std::move(tier.value()) : nullptr;
  }
  std::string BlockFile(uint64_t key) const {
    static const char kDigits[] = "0123456789abcdef";
    std::string name;
    for (uint8_t b : KeyOf(key).bytes) {
      name.push_back(kDigits[b >> 4]);
      name.push_back(kDigits[b & 15]);
    }
    return blocks_ + "/" + name + ".blk";
  }
  void FlipByte(uint64_t key, off_t offset) {
    int fd = ::open(BlockFile(key).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t byte = 0;
    ASSERT_EQ(::pread(fd, &byte, 1, offset), 1);
    byte ^= 0x80;
    ASSERT_EQ(::pwrite(fd, &byte, 1, offset), 1);
    ::close(fd);
  }

  TempDir dir_;
  std::string blocks_ = dir_.path() + "/blocks";
};

TEST_F(TierDiskFormatTest, TheHeaderHoldsXxh3OfThePayloadAndOfItself) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{240}, uint64_t{300000}}) {
    SCOPED_TRACE(size);
    std::vector<uint8_t> block = Pattern(size, size + 3);
    ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
    const std::string file = ReadFile(BlockFile(1));
    ASSERT_EQ(file.size(), kHeader + size);
    EXPECT_EQ(file.compare(0, 8, "MSTRTBLK"), 0);
    uint32_t version = 0, header_size = 0;
    std::memcpy(&version, file.data() + 8, 4);
    std::memcpy(&header_size, file.data() + 12, 4);
    EXPECT_EQ(version, 2u);
    EXPECT_EQ(header_size, kHeader);
    EXPECT_EQ(Load64(file, 48), size);
    const XXH128_hash_t payload = XXH3_128bits(file.data() + kHeader, size);
    EXPECT_EQ(Load64(file, kPayloadHashAt), payload.low64);
    EXPECT_EQ(Load64(file, kPayloadHashAt + 8), payload.high64);
    EXPECT_EQ(Load64(file, kHeaderHashAt), XXH3_64bits(file.data(), kHeaderHashAt));
  }
}

TEST_F(TierDiskFormatTest, AnyDamagedByteIsDataLossAndZerosTheDestination) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  const uint64_t size = 70000;
  std::vector<uint8_t> block = Pattern(size, 4);
  // Payload: first, middle, last byte; header: payload hash (both halves), header hash.
  for (off_t at : {off_t{kHeader}, off_t{kHeader + size / 2}, off_t{kHeader + size - 1},
                   off_t{kPayloadHashAt}, off_t{kPayloadHashAt + 15}, off_t{kHeaderHashAt + 3}}) {
    SCOPED_TRACE(at);
    ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
    FlipByte(1, at);
    std::vector<uint8_t> back(size, 0xAB);
    EXPECT_EQ(tier->Get(1, back), MSTAR_ERR_DATA_LOSS);
    EXPECT_EQ(back, std::vector<uint8_t>(size, 0));
    EXPECT_FALSE(fs::exists(BlockFile(1)));
  }
}

// A run of GETs is shared between the worker and the waiting thread (or, when the caller only
// polls, run by the worker alone): either way every damaged block is DATA_LOSS with a zeroed
// destination and its file removed, a missing key is NOT_FOUND, and every other block comes back
// intact. A second GET of a damaged key in the same run may race the first one's removal: it
// fails too, and never hands out the damaged bytes.
TEST_F(TierDiskFormatTest, ARunOfGetsChecksEveryBlockWhetherTheCallerWaitsOrPolls) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  const uint64_t size = 70000, count = 24;
  const std::vector<uint64_t> damaged = {5, 17, 23};
  for (bool wait : {true, false}) {
    SCOPED_TRACE(wait ? "wait" : "poll");
    std::vector<std::vector<uint8_t>> blocks, back;
    std::vector<mstar_tier_op_t> ops;
    for (uint64_t key = 0; key < count; ++key) {
      blocks.push_back(Pattern(size, key + (wait ? 0 : 100)));
      ASSERT_EQ(tier->Put(key, blocks.back()), MSTAR_OK);
      back.emplace_back(size, 0xAB);
    }
    for (uint64_t key : damaged) FlipByte(key, static_cast<off_t>(kHeader + key * 1000));
    for (uint64_t key = 0; key < count; ++key) {
      ops.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(key), back[key].data(), size));
    }
    std::vector<uint8_t> absent(size, 0xAB), again(size, 0xAB);
    ops.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(count + 7), absent.data(), size));
    ops.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(damaged[0]), again.data(), size));
    std::vector<uint32_t> results;
    if (wait) {
      results = tier->Run(ops);
    } else {
      const mstar_host_api_t* h = tier->host();
      mstar_tier_batch_t* batch = nullptr;
      ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), ops.data(),
                                            static_cast<uint32_t>(ops.size()), nullptr, &batch))
                      .ok());
      uint32_t done = 0;
      while (done == 0) ASSERT_TRUE(TakeStatus(h->tier_poll(tier->handle(), batch, &done)).ok());
      h->tier_release_batch(tier->handle(), batch);
      for (const mstar_tier_op_t& op : ops) results.push_back(op.result);
    }
    ASSERT_EQ(results.size(), count + 2);
    EXPECT_EQ(results[count], MSTAR_ERR_NOT_FOUND);
    EXPECT_EQ(absent, std::vector<uint8_t>(size, 0xAB));
    EXPECT_TRUE(results[count + 1] == MSTAR_ERR_DATA_LOSS ||
                results[count + 1] == MSTAR_ERR_NOT_FOUND)
        << results[count + 1];
    EXPECT_TRUE(again == std::vector<uint8_t>(size, 0) ||
                again == std::vector<uint8_t>(size, 0xAB));
    for (uint64_t key = 0; key < count; ++key) {
      SCOPED_TRACE(key);
      const bool bad = std::find(damaged.begin(), damaged.end(), key) != damaged.end();
      EXPECT_EQ(results[key], bad ? MSTAR_ERR_DATA_LOSS : MSTAR_OK);
      EXPECT_EQ(back[key], bad ? std::vector<uint8_t>(size, 0) : blocks[key]);
      EXPECT_EQ(fs::exists(BlockFile(key)), !bad);
    }
  }
}

TEST_F(TierDiskFormatTest, ATruncatedOrExtendedPayloadIsDataLoss) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(5000, 5);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  ASSERT_EQ(tier->Put(2, block), MSTAR_OK);
  ASSERT_EQ(tier->Put(3, block), MSTAR_OK);
  ASSERT_EQ(::truncate(BlockFile(1).c_str(), kHeader + block.size() - 1), 0);
  ASSERT_EQ(::truncate(BlockFile(2).c_str(), kHeader - 1), 0);
  ASSERT_EQ(::truncate(BlockFile(3).c_str(), kHeader + block.size() + 1), 0);
  for (uint64_t key : {1, 2, 3}) {
    std::vector<uint8_t> back(block.size());
    EXPECT_EQ(tier->Get(key, back), MSTAR_ERR_DATA_LOSS) << key;
    EXPECT_EQ(back, std::vector<uint8_t>(block.size(), 0)) << key;
  }
}

TEST_F(TierDiskFormatTest, AVersionOneFileIsDataLossOnGetNeverData) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(4096, 6);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  WriteFile(BlockFile(1), VersionOneFile(1, block));
  LogCapture log;
  std::vector<uint8_t> back(block.size());
  EXPECT_EQ(tier->Get(1, back), MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(back, std::vector<uint8_t>(block.size(), 0));
  EXPECT_FALSE(fs::exists(BlockFile(1)));
  EXPECT_TRUE(log.Contains("format version 1, expected 2"))
      << ::testing::PrintToString(log.Lines());
}

TEST_F(TierDiskFormatTest, StartupDropsVersionOneFilesUnderTheCurrentIdentity) {
  std::vector<uint8_t> block = Pattern(1000, 7);
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
    ASSERT_EQ(tier->Put(2, block), MSTAR_OK);
  }
  WriteFile(BlockFile(2), VersionOneFile(2, block));
  LogCapture log;
  auto tier = Make("persistent = true");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  EXPECT_FALSE(fs::exists(BlockFile(2)));
  EXPECT_TRUE(log.Contains("format version 1, expected 2"))
      << ::testing::PrintToString(log.Lines());
}

TEST_F(TierDiskFormatTest, AVersionOneDirectoryIsWipedAtStartupWithAnInfoLog) {
  std::vector<uint8_t> block = Pattern(1000, 8);
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  }
  // What a version-1 build left behind: its identity line and its block file.
  const std::string identity = blocks_ + "/tier_identity";
  std::string text = ReadFile(identity);
  ASSERT_EQ(text.rfind("mstar tier_disk 2\n", 0), 0u) << text;
  text[16] = '1';
  WriteFile(identity, text);
  WriteFile(BlockFile(1), VersionOneFile(1, block));
  LogCapture log;
  auto tier = Make("persistent = true");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_FALSE(fs::exists(BlockFile(1)));
  EXPECT_EQ(tier->Info().used_bytes, 0u);
  EXPECT_TRUE(log.Contains("another block file format")) << ::testing::PrintToString(log.Lines());
  EXPECT_TRUE(log.Contains("removed 1 block files")) << ::testing::PrintToString(log.Lines());
  EXPECT_EQ(ReadFile(identity).rfind("mstar tier_disk 2\n", 0), 0u);
}

}  // namespace
}  // namespace mstar::test
