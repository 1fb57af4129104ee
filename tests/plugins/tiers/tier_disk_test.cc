// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// tier_disk's own promises: reuse across restarts under the same checkpoint identity, a wipe under
// another, cleanup on destroy, and DATA_LOSS (never wrong bytes) for block files damaged on disk.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "host/host_api.h"
#include "support/test_support.h"
#include "tier_harness.h"

namespace mstar::test {
namespace {

namespace fs = std::filesystem;

class TierDiskTest : public ::testing::Test {
 protected:
  std::unique_ptr<TierHarness> Make(const std::string& extra = "",
                                    const std::string& identity = "ckpt-A") {
    auto tier =
        TierHarness::Create("tier_disk", "directory = \"" + blocks_ + "\"\n" + extra, identity);
    EXPECT_TRUE(tier.ok()) << tier.status().ToString();
    return tier.ok() ? std::move(tier.value()) : nullptr;
  }
  std::string BlockFile(uint64_t key) const {
    static const char kDigits[] = "0123456789abcdef";
    mstar_tier_key_t k = KeyOf(key);
    std::string name;
    for (uint8_t b : k.bytes) {
      name.push_back(kDigits[b >> 4]);
      name.push_back(kDigits[b & 15]);
    }
    return blocks_ + "/" + name + ".blk";
  }
  // The temporary file an interrupted PUT of key would leave.
  std::string TempFile(uint64_t key) const {
    const std::string block = BlockFile(key);
    return block.substr(0, block.size() - 4) + ".tmp.123.0";
  }

  TempDir dir_;
  std::string blocks_ = dir_.path() + "/blocks";
};

TEST_F(TierDiskTest, RestartReusesBlocksUnderTheSameIdentity) {
  std::vector<uint8_t> a = Pattern(5000, 1), b = Pattern(0, 2), c = Pattern(1 << 20, 3);
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    EXPECT_EQ(tier->Info().persistent, 1u);
    ASSERT_EQ(tier->Put(1, a), MSTAR_OK);
    ASSERT_EQ(tier->Put(2, b), MSTAR_OK);
    ASSERT_EQ(tier->Put(3, c), MSTAR_OK);
  }
  ASSERT_TRUE(fs::exists(BlockFile(1)));
  auto tier = Make("persistent = true");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Info().used_bytes, a.size() + b.size() + c.size());
  std::vector<uint8_t> back(a.size());
  ASSERT_EQ(tier->Get(1, back), MSTAR_OK);
  EXPECT_EQ(back, a);
  back.assign(0, 0);
  ASSERT_EQ(tier->Get(2, back), MSTAR_OK);
  back.resize(c.size());
  ASSERT_EQ(tier->Get(3, back), MSTAR_OK);
  EXPECT_EQ(back, c);
}

TEST_F(TierDiskTest, ADifferentIdentityWipesTheOldBlocksWithAnInfoLog) {
  {
    auto tier = Make("persistent = true", "ckpt-A");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, Pattern(100, 1)), MSTAR_OK);
    ASSERT_EQ(tier->Put(2, Pattern(100, 2)), MSTAR_OK);
  }
  LogCapture log;
  auto tier = Make("persistent = true", "ckpt-B");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Info().used_bytes, 0u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 0u);
  EXPECT_TRUE(log.Contains("another checkpoint identity")) << ::testing::PrintToString(log.Lines());
  EXPECT_TRUE(log.Contains("removed 2 block files")) << ::testing::PrintToString(log.Lines());
}

TEST_F(TierDiskTest, WithoutACheckpointIdentityBlocksAreNeverReused) {
  {
    auto tier = Make("persistent = true", "");
    ASSERT_NE(tier, nullptr);
    EXPECT_EQ(tier->Info().persistent, 0u) << "its blocks do not survive a restart";
    ASSERT_EQ(tier->Put(1, Pattern(100, 1)), MSTAR_OK);
  }
  LogCapture log;
  auto tier = Make("persistent = true", "");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 0u);
  EXPECT_TRUE(log.Contains("no checkpoint identity")) << ::testing::PrintToString(log.Lines());
}

// A block file of another identity that cannot be removed (here a directory under a block
// file's name: unlink fails with EISDIR, for root too) must never be read as this identity's.
// The directory then records no identity, so no block in it survives a restart.
TEST_F(TierDiskTest, ABlockOfAnotherIdentityThatStaysLeavesTheDirectoryWithoutIdentity) {
  {
    auto tier = Make("persistent = true", "ckpt-A");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, Pattern(100, 1)), MSTAR_OK);
  }
  fs::create_directories(BlockFile(7) + "/inside");
  {
    LogCapture log;
    auto tier = Make("persistent = true", "ckpt-B");
    ASSERT_NE(tier, nullptr);
    EXPECT_TRUE(log.Contains("could not remove 1 block files"))
        << ::testing::PrintToString(log.Lines());
    EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
    EXPECT_EQ(tier->Contains(7), MSTAR_ERR_NOT_FOUND);
    EXPECT_EQ(tier->Info().persistent, 0u);  // what it keeps does not survive a restart
    ASSERT_EQ(tier->Put(2, Pattern(100, 2)), MSTAR_OK);
  }
  EXPECT_FALSE(fs::exists(blocks_ + "/tier_identity"));
  auto tier = Make("persistent = true", "ckpt-B");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
}

// A GET reads a block file with one readv, which Linux caps at 0x7ffff000 bytes: a block whose
// file would be larger is refused at PUT (before its bytes are read), not lost at its first GET.
TEST_F(TierDiskTest, ABlockLargerThanOneReadIsRefusedAtPut) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  uint8_t byte = 0;
  std::vector<mstar_tier_op_t> ops = {Op(MSTAR_TIER_OP_PUT, KeyOf(1), &byte, uint64_t{1} << 31)};
  EXPECT_EQ(tier->Run(ops), (std::vector<uint32_t>{MSTAR_ERR_RESOURCE_EXHAUSTED}));
  EXPECT_EQ(tier->Info().used_bytes, 0u);
  EXPECT_EQ(CountContaining(blocks_, ".blk"), 0u);
}

TEST_F(TierDiskTest, CleanupRemovesItsFilesOnDestroyUnlessPersistent) {
  {
    auto tier = Make();
    ASSERT_NE(tier, nullptr);
    EXPECT_EQ(tier->Info().persistent, 0u);
    ASSERT_EQ(tier->Put(1, Pattern(100, 1)), MSTAR_OK);
    ASSERT_TRUE(fs::exists(BlockFile(1)));
  }
  EXPECT_FALSE(fs::exists(blocks_));
  {
    auto tier = Make("persistent = true\ncleanup = true");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, Pattern(100, 1)), MSTAR_OK);
  }
  EXPECT_FALSE(fs::exists(blocks_));
  {
    auto tier = Make("cleanup = false");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, Pattern(100, 1)), MSTAR_OK);
  }
  EXPECT_TRUE(fs::exists(BlockFile(1)));
}

TEST_F(TierDiskTest, ACorruptedHeaderIsDataLoss) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(1000, 9);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  ASSERT_EQ(tier->Put(2, block), MSTAR_OK);
  // Block 1: a byte of the key; block 2: the payload size (the file size then disagrees too).
  for (auto [key, offset] : {std::pair<uint64_t, off_t>{1, 20}, {2, 48}}) {
    int fd = ::open(BlockFile(key).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t byte = 0;
    ASSERT_EQ(::pread(fd, &byte, 1, offset), 1);
    byte ^= 0x01;
    ASSERT_EQ(::pwrite(fd, &byte, 1, offset), 1);
    ::close(fd);
  }
  std::vector<uint8_t> back(block.size());
  EXPECT_EQ(tier->Get(1, back), MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(tier->Get(2, back), MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
}

TEST_F(TierDiskTest, ABlockFileWithAnotherKeyOrTrailingBytesIsDataLoss) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(1000, 7);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  ASSERT_EQ(tier->Put(2, block), MSTAR_OK);
  // Block 2's file now holds block 1's bytes (same size and checksum, wrong key).
  fs::copy_file(BlockFile(1), BlockFile(2), fs::copy_options::overwrite_existing);
  std::string extra = ReadFile(BlockFile(1)) + "x";
  WriteFile(BlockFile(1), extra);
  std::vector<uint8_t> back(block.size());
  EXPECT_EQ(tier->Get(2, back), MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(tier->Get(1, back), MSTAR_ERR_DATA_LOSS);
}

TEST_F(TierDiskTest, StartupDropsDamagedHeadersAndLeftoverTempFiles) {
  std::vector<uint8_t> good = Pattern(300, 8);
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, good), MSTAR_OK);
    ASSERT_EQ(tier->Put(2, good), MSTAR_OK);
  }
  WriteFile(BlockFile(2), "not a block file");
  WriteFile(TempFile(3), "half a block");
  WriteFile(blocks_ + "/tier_identity.tmp.identity", "half an identity");
  // Names that are not the tier's own stay, ".tmp." in them or not.
  const std::vector<std::string> foreign = {"notes.txt", "notes.tmp.txt", "x.tmp.1.2"};
  for (const std::string& name : foreign) WriteFile(blocks_ + "/" + name, "not ours");
  fs::create_directories(blocks_ + "/a.tmp.b");
  auto tier = Make("persistent = true");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  EXPECT_FALSE(fs::exists(BlockFile(2)));
  EXPECT_FALSE(fs::exists(TempFile(3)));
  EXPECT_FALSE(fs::exists(blocks_ + "/tier_identity.tmp.identity"));
  for (const std::string& name : foreign) EXPECT_TRUE(fs::exists(blocks_ + "/" + name)) << name;
  EXPECT_TRUE(fs::exists(blocks_ + "/a.tmp.b"));
  EXPECT_EQ(tier->Info().used_bytes, good.size());
}

// What a file of size bytes counts for in the store: its size less a block file's header.
uint64_t Payload(off_t size) {
  return size > 80 ? static_cast<uint64_t>(size) - 80 : 0;
}

// A damaged block and a leftover temporary file that cannot be removed at start-up (here
// directories under their names: unlink fails with EISDIR, for root too) keep counting against
// the capacity as orphans. They count as a block does: their size less a block file's 80-byte
// header (nothing when shorter: a directory's size depends on the file system).
TEST_F(TierDiskTest, StartupKeepsCountingWhatItCannotRemove) {
  std::vector<uint8_t> good = Pattern(300, 8);
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, good), MSTAR_OK);
  }
  const std::string damaged = BlockFile(2), temp = TempFile(3);
  for (const std::string& dir : {damaged, temp}) fs::create_directories(dir + "/inside");
  LogCapture log;
  auto tier = Make("persistent = true");
  ASSERT_NE(tier, nullptr);
  EXPECT_TRUE(log.Contains("could not remove an interrupted write"))
      << ::testing::PrintToString(log.Lines());
  EXPECT_TRUE(log.Contains("could not remove a damaged block"))
      << ::testing::PrintToString(log.Lines());
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat(damaged.c_str(), &a), 0);
  ASSERT_EQ(::stat(temp.c_str(), &b), 0);
  EXPECT_EQ(tier->Info().used_bytes, good.size() + Payload(a.st_size) + Payload(b.st_size));
}

// What start-up cannot remove counts against the capacity there too: it evicts reusable blocks
// until the directory holds no more than capacity_bytes.
TEST_F(TierDiskTest, StartupEvictsToMakeRoomForWhatItCannotRemove) {
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    ASSERT_EQ(tier->Put(1, Pattern(600, 1)), MSTAR_OK);
    ASSERT_EQ(tier->Put(2, Pattern(600, 2)), MSTAR_OK);
  }
  for (uint64_t k = 1; k <= 2; ++k) {  // 1 written first
    timespec times[2] = {{1000 * static_cast<int64_t>(k), 0}, {1000 * static_cast<int64_t>(k), 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, BlockFile(k).c_str(), times, 0), 0);
  }
  fs::create_directories(TempFile(3) + "/inside");  // unlink fails with EISDIR
  struct stat st {};
  ASSERT_EQ(::stat(TempFile(3).c_str(), &st), 0);
  const uint64_t stuck = Payload(st.st_size);
  auto tier = Make("persistent = true\ncapacity_bytes = " + std::to_string(1200 + stuck - 1));
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(1), MSTAR_ERR_NOT_FOUND);  // written first: least recently used
  EXPECT_EQ(tier->Contains(2), MSTAR_OK);
  EXPECT_EQ(tier->Info().used_bytes, 600 + stuck);
}

TEST_F(TierDiskTest, StartupRebuildsLruOrderFromWriteTimes) {
  {
    auto tier = Make("persistent = true");
    ASSERT_NE(tier, nullptr);
    for (uint64_t k = 1; k <= 3; ++k) ASSERT_EQ(tier->Put(k, Pattern(1000, k)), MSTAR_OK);
  }
  // Write order 2 (oldest), 3, 1 (newest).
  const int64_t seconds[] = {0, 3000, 1000, 2000};
  for (uint64_t k = 1; k <= 3; ++k) {
    timespec times[2] = {{seconds[k], 0}, {seconds[k], 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, BlockFile(k).c_str(), times, 0), 0);
  }
  auto tier = Make("persistent = true\ncapacity_bytes = 2000");
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->Contains(2), MSTAR_ERR_NOT_FOUND);
  EXPECT_FALSE(fs::exists(BlockFile(2)));
  EXPECT_EQ(tier->Contains(3), MSTAR_OK);
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
  // Next eviction takes 3, the older of the two.
  ASSERT_EQ(tier->Put(4, Pattern(1000, 4)), MSTAR_OK);
  EXPECT_EQ(tier->Contains(3), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(tier->Contains(1), MSTAR_OK);
}

TEST_F(TierDiskTest, WaitTimesOutWhileTheWorkerIsBusyAndPollSaysNotDone) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> block = Pattern(1000, 10);
  ASSERT_EQ(tier->Put(1, block), MSTAR_OK);
  // Replace the block file with a FIFO: the worker's open for reading blocks until a writer comes.
  ASSERT_EQ(::unlink(BlockFile(1).c_str()), 0);
  ASSERT_EQ(::mkfifo(BlockFile(1).c_str(), 0644), 0);
  const mstar_host_api_t* h = tier->host();
  std::vector<uint8_t> back(block.size());
  mstar_tier_op_t get = Op(MSTAR_TIER_OP_GET, KeyOf(1), back.data(), back.size());
  mstar_tier_op_t contains = Op(MSTAR_TIER_OP_CONTAINS, KeyOf(1));
  mstar_tier_batch_t* first = nullptr;
  mstar_tier_batch_t* second = nullptr;
  ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), &get, 1, nullptr, &first)).ok());
  ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), &contains, 1, nullptr, &second)).ok());

  Status waited = TakeStatus(h->tier_wait(tier->handle(), first, 1000000));  // 1 ms
  EXPECT_EQ(waited.code(), Code::kUnavailable) << waited.ToString();
  uint32_t done = 1;
  ASSERT_TRUE(TakeStatus(h->tier_poll(tier->handle(), second, &done)).ok());
  EXPECT_EQ(done, 0u) << "batches complete in submission order";

  // A writer unblocks the worker; one byte is not a block file.
  int fd = ::open(BlockFile(1).c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "x", 1), 1);
  ::close(fd);
  ASSERT_TRUE(TakeStatus(h->tier_wait(tier->handle(), first, UINT64_MAX)).ok());
  ASSERT_TRUE(TakeStatus(h->tier_wait(tier->handle(), second, UINT64_MAX)).ok());
  h->tier_release_batch(tier->handle(), first);
  h->tier_release_batch(tier->handle(), second);
  EXPECT_EQ(get.result, MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(contains.result, MSTAR_ERR_NOT_FOUND);
  EXPECT_FALSE(fs::exists(BlockFile(1)));
}

// A wait with a timeout keeps it even while the batch's GETs are stuck on storage: it runs none of
// them itself (a claimed GET runs to its end), so it returns UNAVAILABLE and a later wait without
// a timeout finishes the batch.
TEST_F(TierDiskTest, AWaitWithATimeoutRunsNoGetThatCouldOutlastIt) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  std::vector<uint8_t> first_back(1000), second_back(1000);
  std::vector<mstar_tier_op_t> gets;
  for (uint64_t key : {1, 2}) {
    ASSERT_EQ(tier->Put(key, Pattern(1000, key)), MSTAR_OK);
    ASSERT_EQ(::unlink(BlockFile(key).c_str()), 0);
    ASSERT_EQ(::mkfifo(BlockFile(key).c_str(), 0644), 0);  // a read blocks until a writer comes
  }
  gets.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(1), first_back.data(), first_back.size()));
  gets.push_back(Op(MSTAR_TIER_OP_GET, KeyOf(2), second_back.data(), second_back.size()));
  const mstar_host_api_t* h = tier->host();
  mstar_tier_batch_t* batch = nullptr;
  ASSERT_TRUE(TakeStatus(h->tier_submit(tier->handle(), gets.data(), 2, nullptr, &batch)).ok());
  Status waited = TakeStatus(h->tier_wait(tier->handle(), batch, 1000000));  // 1 ms
  EXPECT_EQ(waited.code(), Code::kUnavailable) << waited.ToString();
  for (uint64_t key : {1, 2}) {  // each open waits for the worker to open the FIFO for reading
    int fd = ::open(BlockFile(key).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  ASSERT_TRUE(TakeStatus(h->tier_wait(tier->handle(), batch, UINT64_MAX)).ok());
  h->tier_release_batch(tier->handle(), batch);
  EXPECT_EQ(gets[0].result, MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(gets[1].result, MSTAR_ERR_DATA_LOSS);
}

// GETs of one batch may run at once, so two into the same memory are refused at submit: nothing
// runs and both blocks stay.
TEST_F(TierDiskTest, GetsIntoOverlappingMemoryAreRefusedAndLoseNothing) {
  auto tier = Make();
  ASSERT_NE(tier, nullptr);
  ASSERT_EQ(tier->Put(1, Pattern(1000, 1)), MSTAR_OK);
  ASSERT_EQ(tier->Put(2, Pattern(1000, 2)), MSTAR_OK);
  std::vector<uint8_t> back(1500);
  std::vector<mstar_tier_op_t> gets = {
      Op(MSTAR_TIER_OP_GET, KeyOf(1), back.data() + 500, 1000),
      Op(MSTAR_TIER_OP_GET, KeyOf(2), back.data(), 1000),
  };
  const mstar_host_api_t* h = tier->host();
  mstar_tier_batch_t* batch = nullptr;
  Status refused = TakeStatus(h->tier_submit(tier->handle(), gets.data(), 2, nullptr, &batch));
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("GETs 0 and 1 of the batch write overlapping memory"),
            std::string::npos)
      << refused.ToString();
  EXPECT_EQ(batch, nullptr);
  gets[0].data = back.data() + 1000;  // back to back is fine
  gets[0].size = gets[1].size = 500;
  EXPECT_EQ(tier->Run(gets), std::vector<uint32_t>(2, MSTAR_ERR_INVALID_ARGUMENT))
      << "the sizes differ from the stored ones";
  std::vector<uint8_t> block(1000);
  ASSERT_EQ(tier->Get(1, block), MSTAR_OK);
  EXPECT_EQ(block, Pattern(1000, 1));
  ASSERT_EQ(tier->Get(2, block), MSTAR_OK);
  EXPECT_EQ(block, Pattern(1000, 2));
}

TEST_F(TierDiskTest, ConfigErrorsNameTheKey) {
  auto missing = TierHarness::Create("tier_disk", "capacity_bytes = 10");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("directory"), std::string::npos)
      << missing.status().ToString();
  auto bad_op = TierHarness::Create(
      "tier_disk", "directory = \"" + blocks_ + "\"\n[faults]\nfail_op = \"frobnicate\"\n");
  ASSERT_FALSE(bad_op.ok());
  EXPECT_EQ(bad_op.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad_op.status().message().find("fail_op"), std::string::npos)
      << bad_op.status().ToString();
  // A directory that cannot be created: a regular file is in the way.
  WriteFile(dir_.file("file"), "x");
  auto blocked = TierHarness::Create("tier_disk", "directory = \"" + dir_.file("file") + "/sub\"");
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.status().code(), Code::kIo);
  EXPECT_NE(blocked.status().message().find(dir_.file("file")), std::string::npos)
      << blocked.status().ToString();
}

}  // namespace
}  // namespace mstar::test
