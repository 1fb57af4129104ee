// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// DiskStore (plugins/tier_disk/disk_store.h) when staging or committing a PUT throws midway (out
// of memory: a push_back, an index insert, a message): every temporary block file is closed and
// removed, and the store goes on. The throw is injected through FileOps, at a call made just
// before or amid the steps that may allocate; real FileOps never throw, so this stands in for an
// allocation failing at that point.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "disk_store.h"
#include "support/test_support.h"

namespace mstar::tier_disk {
namespace {

// PosixFileOps that counts the descriptors it has open and throws std::bad_alloc from the call
// it is told to.
class ThrowingFileOps final : public FileOps {
 public:
  // The nth Fsync from now (1: the next) throws.
  void ThrowOnFsync(int nth) { fsync_countdown_ = nth; }
  // The next StartWriteback throws.
  void ThrowOnWriteback() { throw_on_writeback_ = true; }
  int open_descriptors() const { return open_.load(); }

  int Open(const std::string& path, int flags, mode_t mode, int* out_fd) override {
    const int e = base_->Open(path, flags, mode, out_fd);
    if (e == 0) ++open_;
    return e;
  }
  int Write(int fd, const void* data, size_t size) override { return base_->Write(fd, data, size); }
  int Read(int fd, void* data, size_t size, size_t* out_read) override {
    return base_->Read(fd, data, size, out_read);
  }
  int ReadV(int fd, const iovec* buffers, int count, size_t* out_read) override {
    return base_->ReadV(fd, buffers, count, out_read);
  }
  int Fsync(int fd) override {
    if (fsync_countdown_ > 0 && --fsync_countdown_ == 0) throw std::bad_alloc();
    return base_->Fsync(fd);
  }
  void StartWriteback(int fd) override {
    if (throw_on_writeback_) {
      throw_on_writeback_ = false;
      throw std::bad_alloc();
    }
    base_->StartWriteback(fd);
  }
  int Close(int fd) override {
    --open_;  // the descriptor is gone whatever close reports
    return base_->Close(fd);
  }
  int Rename(const std::string& from, const std::string& to) override {
    return base_->Rename(from, to);
  }
  int Unlink(const std::string& path) override { return base_->Unlink(path); }
  int MakeDirs(const std::string& path) override { return base_->MakeDirs(path); }
  int RemoveDir(const std::string& path) override { return base_->RemoveDir(path); }
  int List(const std::string& dir, std::vector<std::string>* out_names) override {
    return base_->List(dir, out_names);
  }
  int Stat(const std::string& path, FileStat* out) override { return base_->Stat(path, out); }
  int StatVfs(const std::string& dir, uint64_t* out_free_bytes) override {
    return base_->StatVfs(dir, out_free_bytes);
  }

 private:
  std::unique_ptr<FileOps> base_ = MakePosixFileOps();
  std::atomic<int> open_{0};
  int fsync_countdown_ = 0;
  bool throw_on_writeback_ = false;
};

mstar_tier_key_t KeyOf(uint8_t n) {
  mstar_tier_key_t key{};
  std::memset(key.bytes, n, sizeof(key.bytes));
  return key;
}

class DiskStoreCleanup : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ops = std::make_unique<ThrowingFileOps>();
    ops_ = ops.get();
    DiskStoreOptions options;
    options.directory = directory_;
    options.identity = {1, 2, 3};
    store_ = std::make_unique<DiskStore>(std::move(ops), std::move(options),
                                         [](uint32_t, const std::string&) {});
    Outcome opened = store_->Open();
    ASSERT_TRUE(opened.ok()) << opened.message;
  }

  // How many temporary block files the directory holds.
  size_t TemporaryFiles() const {
    size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
      if (entry.path().filename().string().find(kTempMarker) != std::string::npos) ++count;
    }
    return count;
  }

  test::TempDir dir_;
  const std::string directory_ = dir_.path() + "/blocks";
  ThrowingFileOps* ops_ = nullptr;  // owned by store_
  std::unique_ptr<DiskStore> store_;
};

// Blocks of a store that does not make its renames durable (a tier that removes its files when
// it ends) are never reused, by a later start of either kind: those a crash left may be older
// than the last ones written, or removed ones back. Nor does such a store reuse any.
TEST(DiskStoreStartup, BlocksOfAStoreWithoutDurableRenamesAreNotReused) {
  test::TempDir dir;
  auto open = [&](bool durable) {
    DiskStoreOptions options;
    options.directory = dir.path() + "/blocks";
    options.identity = {1, 2, 3};
    options.sync_directory = durable;
    auto store = std::make_unique<DiskStore>(MakePosixFileOps(), std::move(options),
                                             [](uint32_t, const std::string&) {});
    Outcome opened = store->Open();
    EXPECT_TRUE(opened.ok()) << opened.message;
    return store;
  };
  const std::vector<uint8_t> data(4096, 0x7e);
  for (bool wrote_durably : {true, false}) {
    for (bool reads_durably : {true, false}) {
      SCOPED_TRACE(std::string("written ") + (wrote_durably ? "durably" : "without fsyncs") +
                   ", read " + (reads_durably ? "durably" : "without fsyncs"));
      {
        std::unique_ptr<DiskStore> store = open(wrote_durably);
        Outcome outcome;
        ASSERT_TRUE(store->StagePut(KeyOf(9), data.data(), data.size(), &outcome).ok());
        store->CommitStaged();
        ASSERT_TRUE(outcome.ok()) << outcome.message;
      }  // gone without RemoveAll, as in a crash
      std::unique_ptr<DiskStore> again = open(reads_durably);
      EXPECT_EQ(again->block_count(), wrote_durably && reads_durably ? 1u : 0u);
    }
  }
}

// Three PUTs staged, and the second's commit throws: the first is in, the other two fail with
// the INTERNAL outcome they were staged with, and none leaves a descriptor or a temporary file.
TEST_F(DiskStoreCleanup, AThrowMidwayThroughACommitLeavesNoDescriptorOrTemporaryFile) {
  const std::vector<uint8_t> data(4096, 0x5a);
  Outcome outcomes[3];
  for (uint8_t i = 0; i < 3; ++i) {
    Outcome staged = store_->StagePut(KeyOf(i), data.data(), data.size(), &outcomes[i]);
    ASSERT_TRUE(staged.ok()) << staged.message;
  }
  ASSERT_EQ(ops_->open_descriptors(), 3);
  ASSERT_EQ(TemporaryFiles(), 3u);

  ops_->ThrowOnFsync(2);
  EXPECT_THROW(store_->CommitStaged(), std::bad_alloc);
  EXPECT_EQ(ops_->open_descriptors(), 0);
  EXPECT_EQ(TemporaryFiles(), 0u);
  EXPECT_TRUE(outcomes[0].ok()) << outcomes[0].message;
  EXPECT_EQ(outcomes[1].code, MSTAR_ERR_INTERNAL);
  EXPECT_EQ(outcomes[2].code, MSTAR_ERR_INTERNAL);

  std::vector<uint8_t> back(data.size());
  EXPECT_TRUE(store_->Get(KeyOf(0), back.data(), back.size()).ok());
  EXPECT_EQ(back, data);
  EXPECT_EQ(store_->Contains(KeyOf(1)), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(store_->Contains(KeyOf(2)), MSTAR_ERR_NOT_FOUND);

  // The store goes on: the failed PUT can be made again.
  Outcome again;
  ASSERT_TRUE(store_->StagePut(KeyOf(1), data.data(), data.size(), &again).ok());
  store_->CommitStaged();
  EXPECT_TRUE(again.ok()) << again.message;
  EXPECT_EQ(store_->Contains(KeyOf(1)), MSTAR_OK);
  EXPECT_EQ(ops_->open_descriptors(), 0);
  EXPECT_EQ(TemporaryFiles(), 0u);
}

// A commit that replaces a block: one index entry per key, its bytes counted once, its data the
// committed one. Then a new key's commit that throws before its rename (its index entry is
// erased) with a replacement staged after it (not committed: the old block stays).
TEST_F(DiskStoreCleanup, AReplacedBlockIsIndexedAndCountedOnce) {
  const std::vector<uint8_t> small(4096, 0x11), large(8192, 0x22);
  for (const std::vector<uint8_t>* data : {&small, &large}) {
    Outcome outcome;
    ASSERT_TRUE(store_->StagePut(KeyOf(3), data->data(), data->size(), &outcome).ok());
    store_->CommitStaged();
    ASSERT_TRUE(outcome.ok()) << outcome.message;
  }
  EXPECT_EQ(store_->block_count(), 1u);
  const uint64_t used = store_->used_bytes();
  std::vector<uint8_t> back(large.size());
  ASSERT_TRUE(store_->Get(KeyOf(3), back.data(), back.size()).ok());
  EXPECT_EQ(back, large);

  // A new key's commit throws before its rename: it leaves no index entry behind, and the
  // replacement staged after it is not committed (the block committed before stays).
  Outcome replaced, fresh;
  ASSERT_TRUE(store_->StagePut(KeyOf(4), small.data(), small.size(), &fresh).ok());
  ASSERT_TRUE(store_->StagePut(KeyOf(3), small.data(), small.size(), &replaced).ok());
  ops_->ThrowOnFsync(1);
  EXPECT_THROW(store_->CommitStaged(), std::bad_alloc);
  EXPECT_EQ(replaced.code, MSTAR_ERR_INTERNAL);
  EXPECT_EQ(fresh.code, MSTAR_ERR_INTERNAL);
  EXPECT_EQ(store_->block_count(), 1u);
  EXPECT_EQ(store_->used_bytes(), used);
  EXPECT_EQ(store_->Contains(KeyOf(4)), MSTAR_ERR_NOT_FOUND);
  ASSERT_TRUE(store_->Get(KeyOf(3), back.data(), back.size()).ok());
  EXPECT_EQ(back, large);
  EXPECT_EQ(TemporaryFiles(), 0u);
}

// StagePut throws once the block's temporary file is written (where it would run out of memory
// queueing the PUT): the file and its descriptor go, and nothing is pending.
TEST_F(DiskStoreCleanup, AThrowOnceTheTemporaryFileIsWrittenRemovesIt) {
  const std::vector<uint8_t> data(4096, 0x3c);
  Outcome outcome;
  ops_->ThrowOnWriteback();
  EXPECT_THROW(store_->StagePut(KeyOf(7), data.data(), data.size(), &outcome), std::bad_alloc);
  EXPECT_EQ(ops_->open_descriptors(), 0);
  EXPECT_EQ(TemporaryFiles(), 0u);
  store_->CommitStaged();
  EXPECT_EQ(store_->Contains(KeyOf(7)), MSTAR_ERR_NOT_FOUND);
  EXPECT_EQ(store_->block_count(), 0u);
}

}  // namespace
}  // namespace mstar::tier_disk
