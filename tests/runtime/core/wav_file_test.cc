// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/wav_file.h"

#include <signal.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace mstar {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The names in dir.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  return names;
}

TEST(WavFile, RoundTripsClipsAndLeavesNoPartialFile) {
  test::TempDir dir;
  std::string path = dir.path() + "/out.wav";
  // Out of range clips to full scale (infinities too); NaN is silence.
  std::vector<float> samples = {0.0f, 0.5f,  -0.5f, 1.0f,  -1.0f,
                                2.0f, -3.0f, kInf,  -kInf, std::numeric_limits<float>::quiet_NaN()};
  ASSERT_TRUE(WriteWav(path, samples, 24000).ok());
  uint32_t rate = 0;
  Result<std::vector<float>> read = ReadWav(path, &rate);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(rate, 24000u);
  ASSERT_EQ(read->size(), samples.size());
  const float expected[] = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 1.0f, -1.0f, 1.0f, -1.0f, 0.0f};
  for (size_t i = 0; i < samples.size(); ++i) EXPECT_NEAR((*read)[i], expected[i], 1e-4) << i;
  EXPECT_EQ(Names(dir.path()), (std::vector<std::string>{"out.wav"}));
}

// A write that fails midway (here the file size limit: EFBIG) is an error naming the file and
// leaves nothing behind, neither the final file nor a partial one.
TEST(WavFile, AWriteThatFailsLeavesNoFile) {
  test::TempDir dir;
  const std::string path = dir.path() + "/big.wav";
  struct sigaction ignore {
  }, before{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &before), 0);  // write fails instead of the signal
  rlimit limit{}, saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  limit = saved;
  limit.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const Status status = WriteWav(path, std::vector<float>(4000, 0.25f), 16000);
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::sigaction(SIGXFSZ, &before, nullptr);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("big.wav"), std::string::npos) << status.message();
  EXPECT_TRUE(Names(dir.path()).empty()) << ::testing::PrintToString(Names(dir.path()));
}

TEST(WavFile, RejectsATruncatedFileNamingIt) {
  test::TempDir dir;
  std::string path = dir.path() + "/cut.wav";
  ASSERT_TRUE(WriteWav(path, std::vector<float>(100, 0.25f), 16000).ok());
  const std::string bytes = test::ReadFile(path);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), 100);
  }
  uint32_t rate = 0;
  Result<std::vector<float>> read = ReadWav(path, &rate);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("cut.wav"), std::string::npos);
}

TEST(WavFile, UnwritableDirectoryIsAnError) {
  Status status = WriteWav("/nonexistent-dir/x.wav", {0.0f}, 24000);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent-dir/x.wav"), std::string::npos);
}

// RIFF sizes are 32 bits: the longest file holds 2147483629 samples (data and header sizes
// then still fit); one more is refused rather than written with a wrapped size.
TEST(WavFile, SizesThatDoNotFitThirtyTwoBitsAreRefused) {
  EXPECT_EQ(WavDataBytes(100).value(), 200u);
  EXPECT_EQ(WavDataBytes(2147483629).value(), 4294967258u);
  Result<uint32_t> over = WavDataBytes(2147483630);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("do not fit a WAV file"), std::string::npos);
  EXPECT_FALSE(WavDataBytes(uint64_t{1} << 31).ok());  // would have wrapped to 0 bytes
  test::TempDir dir;
  Status status = WriteWav(dir.path() + "/rate.wav", {0.0f}, 0);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("sample rate of 0 Hz"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace mstar
