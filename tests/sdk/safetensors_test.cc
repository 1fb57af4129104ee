// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The SDK's safetensors reader against files written here: a good file, a sharded set, and each
// kind of damage (truncated, overlapping offsets, unknown or wrong dtype, wrong shape, bad header).
#include "mstar/sdk/safetensors.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/test_support.h"

namespace mstar {
namespace {

using sdk::Safetensors;

// Writes header (JSON text) and data as a safetensors file.
void WriteSafetensors(const std::string& path, const std::string& header,
                      const std::vector<uint8_t>& data) {
  std::ofstream out(path, std::ios::binary);
  // Padded with spaces to a multiple of 8, as writers do, so the data is aligned for any dtype.
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  uint64_t n = padded.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out.write(padded.data(), static_cast<std::streamsize>(padded.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

std::vector<uint8_t> Floats(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// "a": F32 [2, 3] at [0, 24); "b": I64 [2] at [24, 40).
std::string GoodHeader() {
  return R"({"__metadata__": {"format": "pt"},
            "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
            "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}})";
}

std::vector<uint8_t> GoodData() {
  std::vector<uint8_t> data = Floats({1, 2, 3, 4, 5, 6});
  int64_t b[2] = {7, -8};
  const auto* p = reinterpret_cast<const uint8_t*>(b);
  data.insert(data.end(), p, p + sizeof(b));
  return data;
}

// The message of the sdk::Error that fn throws ("" when it throws nothing).
template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const sdk::Error& e) {
    return e.message();
  }
  return "";
}

// Whether address lies in a mapping of the file at path (/proc/self/maps).
bool MappedFrom(const void* address, const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path))
      continue;
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &begin, &end) == 2 && begin <= at &&
        at < end)
      return true;
  }
  return false;
}

TEST(Safetensors, ReadsAGoodFileWithoutCopying) {
  test::TempDir dir;
  WriteSafetensors(dir.file("model.safetensors"), GoodHeader(), GoodData());
  Safetensors st = Safetensors::Open(dir.path());  // a directory finds model.safetensors
  ASSERT_EQ(st.tensors().size(), 2u);
  const sdk::SafeTensorInfo& a = st.Require("a", "F32", {2, 3});
  EXPECT_EQ(a.bytes, 24u);
  EXPECT_EQ(static_cast<const float*>(a.data)[5], 6.0f);
  const sdk::SafeTensorInfo& b = st.Require("b", "I64", {2});
  EXPECT_EQ(static_cast<const int64_t*>(b.data)[1], -8);
  EXPECT_EQ(b.file, dir.file("model.safetensors"));
  EXPECT_EQ(sdk::SafetensorsDTypeSize("BF16"), 2u);
  // The tensors' bytes are the file's pages, mapped, not a copy.
  const std::string real = std::filesystem::canonical(dir.file("model.safetensors")).string();
  EXPECT_TRUE(MappedFrom(a.data, real));
  EXPECT_TRUE(MappedFrom(b.data, real));
  const std::string copy(static_cast<const char*>(a.data), a.bytes);
  EXPECT_FALSE(MappedFrom(copy.data(), real)) << "a copy is not the file's pages";
}

TEST(Safetensors, MissingTensorWrongDtypeOrShapeNameTheFileAndTensor) {
  test::TempDir dir;
  std::string path = dir.file("w.safetensors");
  WriteSafetensors(path, GoodHeader(), GoodData());
  Safetensors st = Safetensors::Open(path);
  EXPECT_EQ(ErrorOf([&] { st.Get("c"); }), path + ": no tensor 'c'");
  EXPECT_EQ(ErrorOf([&] {
              st.Require("a", "F16", {2, 3});
            }),
            path + ": tensor 'a' has dtype F32, expected F16");
  EXPECT_EQ(ErrorOf([&] {
              st.Require("a", "F32", {3, 2});
            }),
            path + ": tensor 'a' has shape [2, 3], expected [3, 2]");
}

TEST(Safetensors, TruncatedFilesAreRefused) {
  test::TempDir dir;
  std::string path = dir.file("t.safetensors");
  std::vector<uint8_t> data = GoodData();
  data.resize(30);  // "b" ends at 40
  WriteSafetensors(path, GoodHeader(), data);
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }),
            path + ": truncated: tensor 'b' ends at byte 40 of a 30-byte data section");

  test::WriteFile(path, std::string("\x10\0\0", 3));  // shorter than the length field
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }), path + ": truncated (3 bytes)");

  std::string header = GoodHeader();
  WriteSafetensors(path, header, {});
  std::string whole = test::ReadFile(path);
  test::WriteFile(path, whole.substr(0, 8 + header.size() / 2));  // header cut in half
  std::string message = ErrorOf([&] { Safetensors::Open(path); });
  EXPECT_NE(message.find(path + ": truncated or bad header: header length"), std::string::npos)
      << message;
}

TEST(Safetensors, OverlappingOffsetsAreRefused) {
  test::TempDir dir;
  std::string path = dir.file("o.safetensors");
  WriteSafetensors(path,
                   R"({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                       "b": {"dtype": "I64", "shape": [2], "data_offsets": [16, 32]}})",
                   GoodData());
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }),
            path + ": bad header: tensors 'a' and 'b' overlap");
}

// An empty tensor holds no bytes: one placed inside another's range overlaps nothing.
TEST(Safetensors, AnEmptyTensorInsideAnothersRangeIsAccepted) {
  test::TempDir dir;
  std::string path = dir.file("e.safetensors");
  WriteSafetensors(path,
                   R"({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                       "z": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]}})",
                   GoodData());
  Safetensors weights = Safetensors::Open(path);
  EXPECT_EQ(weights.Get("z").bytes, 0u);
  EXPECT_EQ(weights.Get("z").data, nullptr);
  EXPECT_EQ(weights.Get("a").bytes, 24u);
}

// A tensor whose data is not aligned for its dtype in the file (older writers did not pad the
// header to 8) is read through an aligned copy: the same values, a pointer of its type's
// alignment, and not into the mapping. An aligned one is still read in place.
TEST(Safetensors, DataNotAlignedForItsDtypeIsReadThroughAnAlignedCopy) {
  test::TempDir dir;
  std::string path = dir.file("m.safetensors");
  std::vector<uint8_t> data = {0xee, 0xee};
  const std::vector<uint8_t> values = Floats({1.5f, -2.0f});
  data.insert(data.end(), values.begin(), values.end());
  WriteSafetensors(path,
                   R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [2, 10]},
                       "b": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})",
                   data);
  Safetensors weights = Safetensors::Open(path);
  const std::string real = std::filesystem::canonical(path).string();
  const sdk::SafeTensorInfo& a = weights.Get("a");
  ASSERT_EQ(a.bytes, 8u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % alignof(float), 0u);
  EXPECT_FALSE(MappedFrom(a.data, real));
  float read[2];
  std::memcpy(read, a.data, sizeof(read));
  EXPECT_EQ(read[0], 1.5f);
  EXPECT_EQ(read[1], -2.0f);
  EXPECT_TRUE(MappedFrom(weights.Get("b").data, real));
  // A copy of the reader shares the aligned copy with it.
  Safetensors copied = weights;
  EXPECT_EQ(copied.Get("a").data, a.data);
}

// A name listed twice would keep only its last entry, the first never checked: refused. (Names
// inside an entry, as "shape", may repeat across entries.)
TEST(Safetensors, ATensorListedTwiceIsRefused) {
  test::TempDir dir;
  std::string path = dir.file("d.safetensors");
  WriteSafetensors(path,
                   R"({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                       "a": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}})",
                   GoodData());
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }),
            path + ": bad header: tensor 'a' is listed twice");
}

TEST(Safetensors, UnknownDtypeAndInconsistentSizesAreRefused) {
  test::TempDir dir;
  std::string path = dir.file("d.safetensors");
  WriteSafetensors(path, R"({"a": {"dtype": "F33", "shape": [2, 3], "data_offsets": [0, 24]}})",
                   GoodData());
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }),
            path + ": bad header: tensor 'a' has unknown dtype 'F33'");
  // F16 [2, 3] is 12 bytes, not 24.
  WriteSafetensors(path, R"({"a": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 24]}})",
                   GoodData());
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }),
            path + ": bad header: tensor 'a' holds 24 bytes, but F16 [2, 3] needs 12");
}

TEST(Safetensors, BadHeadersAreRefused) {
  test::TempDir dir;
  std::string path = dir.file("h.safetensors");
  WriteSafetensors(path, "{not json", GoodData());
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }), path + ": bad header: not a JSON object");
  WriteSafetensors(path, R"({"a": {"dtype": "F32", "shape": [6]}})", GoodData());
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(path); }),
            path + ": bad header: tensor 'a' has no data_offsets [begin, end]");
  EXPECT_EQ(ErrorOf([&] {
              Safetensors::Open(dir.file("absent.safetensors"));
            }).rfind(dir.file("absent.safetensors") + ": cannot open", 0),
            0u);
}

TEST(Safetensors, ShardedSetThroughItsIndex) {
  test::TempDir dir;
  WriteSafetensors(dir.file("model-00001-of-00002.safetensors"),
                   R"({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})",
                   Floats({1, 2, 3, 4, 5, 6}));
  WriteSafetensors(dir.file("model-00002-of-00002.safetensors"),
                   R"({"c": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", Floats({9}));
  test::WriteFile(dir.file("model.safetensors.index.json"),
                  R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                     "c": "model-00002-of-00002.safetensors"}})");
  Safetensors st = Safetensors::Open(dir.path());
  EXPECT_EQ(static_cast<const float*>(st.Require("c", "F32", {1}).data)[0], 9.0f);
  EXPECT_EQ(st.Get("a").file, dir.file("model-00001-of-00002.safetensors"));

  // The index names a tensor its shard lacks.
  test::WriteFile(dir.file("model.safetensors.index.json"),
                  R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                     "z": "model-00002-of-00002.safetensors"}})");
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(dir.path()); }),
            dir.file("model-00002-of-00002.safetensors") + ": no tensor 'z' (the index " +
                dir.file("model.safetensors.index.json") + " places it here)");
}

// Weights come from files the operator did not write: an index may only name shards beside it,
// a FIFO is refused rather than waited on, and a header longer than the format's limit is refused
// before it is parsed (the file here is sparse: 120 MB claimed, nothing written).
TEST(Safetensors, UntrustedFilesCannotLeadElsewhereHangOrClaimAHugeHeader) {
  test::TempDir dir;
  WriteSafetensors(dir.file("model-00001-of-00001.safetensors"),
                   R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", Floats({1}));
  for (const std::string& shard : {std::string("../model-00001-of-00001.safetensors"),
                                   dir.file("model-00001-of-00001.safetensors"),
                                   std::string("sub/x.safetensors"), std::string("..")}) {
    test::WriteFile(dir.file("model.safetensors.index.json"),
                    R"({"weight_map": {"a": ")" + shard + R"("}})");
    EXPECT_EQ(ErrorOf([&] { Safetensors::Open(dir.path()); }),
              dir.file("model.safetensors.index.json") + ": weight_map names shard '" + shard +
                  "', which is not a file name beside the index")
        << shard;
  }

  const std::string fifo = dir.file("fifo.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(fifo); }), fifo + ": not a regular file");

  const std::string sparse = dir.file("sparse.safetensors");
  {
    std::ofstream out(sparse, std::ios::binary);
    const uint64_t claimed = 120'000'000;
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((claimed >> (8 * i)) & 0xff));
  }
  std::filesystem::resize_file(sparse, 130'000'000);
  EXPECT_EQ(ErrorOf([&] { Safetensors::Open(sparse); }),
            sparse + ": bad header: header length 120000000 exceeds 100000000 bytes");
}

}  // namespace
}  // namespace mstar
