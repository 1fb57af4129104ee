// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "block_file.h"

#include <fcntl.h>

#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "block_hash.h"
#include "mstar/sdk/bytes.hpp"

namespace mstar::tier_disk {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the block file format is little-endian; add byte swaps for this target");

constexpr char kMagic[8] = {'M', 'S', 'T', 'R', 'T', 'B', 'L', 'K'};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;
  uint8_t key[32];
  uint64_t payload_size;
  uint64_t payload_hash[2];  // XXH3-128 of the payload: low 64 bits, then high
  uint64_t header_hash;      // XXH3-64 of the header bytes before this field
};
static_assert(sizeof(Header) == kBlockHeaderSize, "block header layout");
static_assert(offsetof(Header, header_hash) == kBlockHeaderSize - 8, "block header layout");

uint64_t HeaderHash(const Header& h) {
  return BlockHeaderHash(&h, offsetof(Header, header_hash));
}

std::string Describe(const char* call, const std::string& path, int error) {
  return std::string("tier_disk: ") + call + " of " + path + " failed: " + std::strerror(error);
}

Outcome Fail(const char* call, const std::string& path, int error) {
  return {CodeForErrno(error), Describe(call, path, error)};
}

Outcome Loss(const std::string& path, const std::string& why) {
  return {MSTAR_ERR_DATA_LOSS, "tier_disk: block file " + path + " is unusable: " + why};
}

Outcome CheckHeader(const Header& h, const mstar_tier_key_t& key, const std::string& path) {
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return Loss(path, "bad magic");
  // The version first: a file of another version has another layout (version 1: a 64-byte
  // header with CRC-32C checksums), so its checksum fields mean nothing here.
  if (h.version != kBlockFormatVersion) {
    return Loss(path, "format version " + std::to_string(h.version) + ", expected " +
                          std::to_string(kBlockFormatVersion));
  }
  if (h.header_hash != HeaderHash(h)) return Loss(path, "header checksum mismatch");
  if (h.header_size != kBlockHeaderSize) return Loss(path, "bad header size");
  if (std::memcmp(h.key, key.bytes, sizeof(h.key)) != 0) return Loss(path, "key mismatch");
  return {};
}

}  // namespace

std::string KeyHex(const mstar_tier_key_t& key) {
  return sdk::HexString(key.bytes, sizeof(key.bytes));
}

namespace {

// Parses the 64 hex digits at the start of name into a key.
bool ParseKeyHex(const std::string& name, mstar_tier_key_t* out_key) {
  if (name.size() < 64) return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < 32; ++i) {
    int hi = digit(name[2 * i]);
    int lo = digit(name[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out_key->bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

// Whether text[from, to) is one or more decimal digits.
bool AllDigits(const std::string& text, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i)
    if (text[i] < '0' || text[i] > '9') return false;
  return true;
}

}  // namespace

bool ParseBlockFileName(const std::string& name, mstar_tier_key_t* out_key) {
  const size_t suffix = std::strlen(kBlockSuffix);
  if (name.size() != 64 + suffix || name.compare(64, suffix, kBlockSuffix) != 0) return false;
  return ParseKeyHex(name, out_key);
}

bool IsBlockTempFileName(const std::string& name) {
  mstar_tier_key_t key{};
  const size_t marker = std::strlen(kTempMarker);
  if (!ParseKeyHex(name, &key) || name.compare(64, marker, kTempMarker) != 0) return false;
  const size_t dot = name.find('.', 64 + marker);
  return dot != std::string::npos && AllDigits(name, 64 + marker, dot) &&
         AllDigits(name, dot + 1, name.size());
}

uint32_t CodeForErrno(int error) {
  return error == ENOSPC || error == EDQUOT ? MSTAR_ERR_RESOURCE_EXHAUSTED : MSTAR_ERR_IO;
}

StagedBlock::StagedBlock(StagedBlock&& other) noexcept
    : ops(std::exchange(other.ops, nullptr)),
      fd(std::exchange(other.fd, -1)),
      temp_path(std::move(other.temp_path)),
      final_path(std::move(other.final_path)) {}

StagedBlock& StagedBlock::operator=(StagedBlock&& other) noexcept {
  if (this != &other) {
    Discard();
    ops = std::exchange(other.ops, nullptr);
    fd = std::exchange(other.fd, -1);
    temp_path = std::move(other.temp_path);
    final_path = std::move(other.final_path);
  }
  return *this;
}

void StagedBlock::Discard() noexcept {
  if (ops == nullptr) return;
  if (fd >= 0) ops->Close(fd);
  ops->Unlink(temp_path);
  ops = nullptr;
  fd = -1;
}

Outcome StageBlockFile(FileOps& ops, const std::string& dir, const std::string& temp_name,
                       const mstar_tier_key_t& key, const void* data, uint64_t size,
                       StagedBlock* out) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kBlockFormatVersion;
  h.header_size = kBlockHeaderSize;
  std::memcpy(h.key, key.bytes, sizeof(h.key));
  h.payload_size = size;
  const BlockPayloadHash hash = HashBlockPayload(data, size);
  h.payload_hash[0] = hash.low;
  h.payload_hash[1] = hash.high;
  h.header_hash = HeaderHash(h);

  out->temp_path = dir + "/" + temp_name;
  out->final_path = dir + "/" + KeyHex(key) + kBlockSuffix;
  const std::string& temp = out->temp_path;
  int fd = -1;
  if (int e = ops.Open(temp, O_WRONLY | O_CREAT | O_EXCL, 0644, &fd)) return Fail("open", temp, e);
  out->ops = &ops;  // from here on, out closes and removes the file if this fails or throws
  out->fd = fd;

  int e = ops.Write(fd, &h, sizeof(h));
  if (e == 0 && size != 0) e = ops.Write(fd, data, size);
  if (e != 0) {
    Outcome outcome = Fail("write", temp, e);
    out->Discard();
    return outcome;
  }
  ops.StartWriteback(fd);
  return {};
}

Outcome CommitBlockFile(FileOps& ops, StagedBlock& staged) {
  const std::string& temp = staged.temp_path;
  Outcome outcome;
  if (int e = ops.Fsync(staged.fd)) outcome = Fail("fsync", temp, e);
  int close_error = ops.Close(staged.fd);
  staged.fd = -1;
  if (outcome.ok() && close_error != 0) outcome = Fail("close", temp, close_error);
  if (outcome.ok()) {
    if (int e = ops.Rename(temp, staged.final_path)) outcome = Fail("rename", temp, e);
  }
  if (!outcome.ok()) {
    // One that cannot be removed either is named (the next start removes it).
    if (int e = ops.Unlink(temp); e != 0 && e != ENOENT)
      outcome.message += std::string("; removing it failed too (") + std::strerror(e) +
                         "): it stays until the next start";
  }
  staged.ops = nullptr;  // the temporary file is renamed or removed
  return outcome;
}

Outcome SyncDirectory(FileOps& ops, const std::string& dir, const std::string& after) {
  int dir_fd = -1;
  int e = ops.Open(dir, O_RDONLY | O_DIRECTORY, 0, &dir_fd);
  if (e == 0) {
    e = ops.Fsync(dir_fd);
    ops.Close(dir_fd);
  }
  if (e != 0) return Fail("fsync of the directory after writing", after, e);
  return {};
}

namespace {

// Reads header, payload and a probe byte from fd in one ReadV straight into data (no staging
// copy) and checks them, the payload's checksum last. On DATA_LOSS data may hold garbage; the
// caller zeros it.
Outcome ReadAndCheck(FileOps& ops, int fd, const std::string& path, const mstar_tier_key_t& key,
                     void* data, uint64_t size) {
  Header h{};
  uint8_t extra = 0;
  const iovec buffers[3] = {{&h, sizeof(h)}, {data, size}, {&extra, 1}};
  size_t got = 0;
  if (int e = ops.ReadV(fd, buffers, 3, &got)) return Fail("read", path, e);
  if (got < sizeof(h)) return Loss(path, "truncated header (" + std::to_string(got) + " bytes)");
  Outcome header = CheckHeader(h, key, path);
  if (!header.ok()) return header;
  if (h.payload_size != size) {
    return Loss(path, "payload size " + std::to_string(h.payload_size) + ", expected " +
                          std::to_string(size));
  }
  const uint64_t payload = got - sizeof(h);
  if (payload < size) {
    return Loss(path, "truncated payload (" + std::to_string(payload) + " of " +
                          std::to_string(size) + " bytes)");
  }
  if (payload > size) return Loss(path, "trailing bytes after the payload");
  const BlockPayloadHash actual = HashBlockPayload(data, size);
  if (actual.low != h.payload_hash[0] || actual.high != h.payload_hash[1]) {
    return Loss(path, "payload checksum mismatch");
  }
  return {};
}

std::string BlockPath(const std::string& dir, const mstar_tier_key_t& key) {
  return dir + "/" + KeyHex(key) + kBlockSuffix;
}

}  // namespace

Outcome ReadBlockFile(FileOps& ops, const std::string& dir, const mstar_tier_key_t& key, void* data,
                      uint64_t size) {
  const std::string path = BlockPath(dir, key);
  int fd = -1;
  if (int e = ops.Open(path, O_RDONLY, 0, &fd)) {
    if (e == ENOENT) return Loss(path, "the file is missing");
    return Fail("open", path, e);
  }
  Outcome outcome = ReadAndCheck(ops, fd, path, key, data, size);
  ops.Close(fd);  // read-only: a close error cannot affect the data already read
  if (outcome.code == MSTAR_ERR_DATA_LOSS && size != 0 && data != nullptr) {
    std::memset(data, 0, size);
  }
  return outcome;
}

Outcome ReadBlockHeader(FileOps& ops, const std::string& path, const mstar_tier_key_t& key,
                        uint64_t file_size, uint64_t* out_size) {
  int fd = -1;
  if (int e = ops.Open(path, O_RDONLY, 0, &fd)) return Fail("open", path, e);
  Header h{};
  size_t got = 0;
  int e = ops.Read(fd, &h, sizeof(h), &got);
  ops.Close(fd);
  if (e == EISDIR) return Loss(path, "a directory, not a file");
  if (e != 0) return Fail("read", path, e);
  if (got != sizeof(h)) return Loss(path, "truncated header");
  Outcome outcome = CheckHeader(h, key, path);
  if (!outcome.ok()) return outcome;
  if (file_size != kBlockHeaderSize + h.payload_size) {
    return Loss(path, "file size " + std::to_string(file_size) + " does not match the header");
  }
  *out_size = h.payload_size;
  return {};
}

}  // namespace mstar::tier_disk
