// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// mstar::sdk::Config over the host's real config view: Config::as_directory, the path rule the
// tiny models share (working directory first, then the manifest's directory), and its errors;
// and the version gate of StepDecl::input_tokens, another read of a host struct.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "config/config_tree.h"
#include "config/toml_reader.h"
#include "host/host_api.h"
#include "mstar/sdk/config.hpp"
#include "mstar/sdk/request.hpp"
#include "mstar/sdk/submodule.hpp"
#include "support/test_support.h"

namespace mstar {
namespace {

namespace fs = std::filesystem;

class SdkConfigTest : public ::testing::Test {
 protected:
  // The sdk::Config of `weights = "<value>"` in a file named node.toml.
  sdk::Config Weights(const std::string& value) {
    Diagnostics d;
    auto table = ParseTomlText("weights = \"" + value + "\"\nother = 3\n", "node.toml", &d);
    EXPECT_TRUE(table.has_value());
    tree_ = std::make_shared<ConfigTree>(std::move(*table), "node.toml", "config");
    return sdk::Config(host_.table(), tree_->root()).require("weights");
  }

  // The message of the sdk::Error that fn throws, with its code in *code.
  template <typename Fn>
  std::string ErrorOf(Fn fn, uint32_t* code) {
    try {
      fn();
    } catch (const sdk::Error& e) {
      *code = e.code();
      return e.message();
    }
    ADD_FAILURE() << "no error thrown";
    return "";
  }

  HostApi host_{"sdk_config_test"};
  std::shared_ptr<ConfigTree> tree_;
  test::TempDir dir_;
};

TEST_F(SdkConfigTest, AnAbsoluteDirectoryIsTakenAsIs) {
  EXPECT_EQ(Weights(dir_.path()).as_directory(nullptr, "weights directory"), dir_.path());
}

TEST_F(SdkConfigTest, ARelativeDirectoryIsFoundBesideTheManifest) {
  fs::create_directories(dir_.file("models/tiny"));
  EXPECT_EQ(Weights("models/tiny").as_directory(dir_.path().c_str(), "weights directory"),
            dir_.file("models/tiny"));
}

TEST_F(SdkConfigTest, TheWorkingDirectoryComesBeforeTheManifestsDirectory) {
  const std::string name = "sdk_config_test." + std::to_string(::getpid());
  fs::create_directories(name);  // in the working directory
  fs::create_directories(dir_.file(name));
  std::string found = Weights(name).as_directory(dir_.path().c_str(), "weights directory");
  fs::remove(name);
  EXPECT_EQ(found, name);
}

TEST_F(SdkConfigTest, AnEmptyValueIsAnErrorNamingTheKey) {
  uint32_t code = 0;
  std::string message =
      ErrorOf([&] { Weights("").as_directory(dir_.path().c_str(), "weights directory"); }, &code);
  EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_INVALID_ARGUMENT));
  EXPECT_NE(message.find("node.toml:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("weights: must not be empty (the weights directory)"), std::string::npos)
      << message;
}

TEST_F(SdkConfigTest, AMissingDirectoryNamesTheKeyEveryPlaceTriedAndTheHint) {
  uint32_t code = 0;
  std::string message = ErrorOf(
      [&] {
        Weights("no/such").as_directory(dir_.path().c_str(), "weights directory",
                                        "run make-weights");
      },
      &code);
  EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_NOT_FOUND));
  EXPECT_NE(message.find("node.toml:1:"), std::string::npos) << message;
  EXPECT_NE(message.find("weights directory 'no/such' not found (tried " +
                         fs::absolute("no/such").string() + " or " + dir_.file("no/such") +
                         "); run make-weights"),
            std::string::npos)
      << message;
}

TEST_F(SdkConfigTest, AFileIsNotADirectory) {
  std::ofstream(dir_.file("weights.bin")) << "x";
  uint32_t code = 0;
  std::string message = ErrorOf(
      [&] { Weights(dir_.file("weights.bin")).as_directory(nullptr, "weights directory"); }, &code);
  EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_NOT_FOUND));
  EXPECT_NE(message.find("(tried " + dir_.file("weights.bin") + ")"), std::string::npos) << message;
}

TEST_F(SdkConfigTest, AnAbsolutePathIsNotLookedForBesideTheManifest) {
  uint32_t code = 0;
  std::string message = ErrorOf(
      [&] { Weights("/nonexistent/model").as_directory(dir_.path().c_str(), "weights directory"); },
      &code);
  EXPECT_NE(message.find("(tried /nonexistent/model)"), std::string::npos) << message;
}

TEST_F(SdkConfigTest, AValueThatIsNotAStringIsAnErrorNamingTheKey) {
  Weights(dir_.path());
  sdk::Config other = sdk::Config(host_.table(), tree_->root()).require("other");
  uint32_t code = 0;
  std::string message = ErrorOf([&] { other.as_directory(nullptr, "weights directory"); }, &code);
  EXPECT_NE(message.find("other"), std::string::npos) << message;
}

TEST_F(SdkConfigTest, TypedGetsReturnTheValueTheFallbackOrAnErrorNamingTheKey) {
  Diagnostics d;
  auto table =
      ParseTomlText("small = 7\nnegative = -3\nhuge = 5000000000\nname = \"x\"\n", "node.toml", &d);
  ASSERT_TRUE(table.has_value());
  tree_ = std::make_shared<ConfigTree>(std::move(*table), "node.toml", "config");
  sdk::Config config(host_.table(), tree_->root());
  EXPECT_EQ(config.get("small", 1), 7);
  EXPECT_EQ(config.get("small", 1u), 7u);
  EXPECT_EQ(config.get("small", uint64_t{1}), 7u);
  EXPECT_EQ(config.get("negative", 1), -3);
  EXPECT_EQ(config.get("absent", 4u), 4u);
  EXPECT_EQ(config.get("name", std::string("y")), "x");
  EXPECT_EQ(config.get("absent", std::string("y")), "y");
  EXPECT_EQ(config.get("huge", int64_t{0}), 5000000000);
  uint32_t code = 0;
  EXPECT_NE(ErrorOf([&] { config.get("huge", 0); }, &code)
                .find("node.toml:3:8: config.huge: 5000000000 is out of range [-2147483648, "
                      "2147483647]"),
            std::string::npos);
  EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_INVALID_ARGUMENT));
  EXPECT_NE(ErrorOf([&] { config.get("negative", 0u); }, &code).find("config.negative: -3 is out"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { config.get("negative", uint64_t{0}); }, &code)
                .find("config.negative: -3 is negative"),
            std::string::npos);
}

// BatchBuckets: a bucket's tokens (rows * tokens per row) must fit 32 bits, or the bucket would
// silently hold a wrapped count; both errors name the key.
TEST_F(SdkConfigTest, BatchBucketsRefuseTokenCountsThatDoNotFit) {
  Diagnostics d;
  auto table = ParseTomlText("capture_batch_sizes = [1, 65536]\n", "node.toml", &d);
  ASSERT_TRUE(table.has_value());
  tree_ = std::make_shared<ConfigTree>(std::move(*table), "node.toml", "config");
  sdk::Config config(host_.table(), tree_->root());
  std::vector<mstar_capture_bucket_t> fine =
      sdk::BatchBuckets(config, "capture_batch_sizes", {}, 4);
  ASSERT_EQ(fine.size(), 2u);
  EXPECT_EQ(fine[1].batch_size, 65536u);
  EXPECT_EQ(fine[1].num_tokens, 65536u * 4);
  uint32_t code = 0;
  std::string message =
      ErrorOf([&] { sdk::BatchBuckets(config, "capture_batch_sizes", {}, 65536); }, &code);
  EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_INVALID_ARGUMENT));
  EXPECT_NE(message.find("node.toml:1:23: config.capture_batch_sizes: a bucket of 65536 rows of "
                         "65536 tokens holds more than 2^32 tokens"),
            std::string::npos)
      << message;
  message = ErrorOf([&] { sdk::BatchBuckets(config, "sizes", {1, 2}, 0); }, &code);
  EXPECT_NE(message.find("config.sizes: 0 tokens per row is not in [1, 2^32)"), std::string::npos)
      << message;
}

// Reading the value of a key that is not there names the table and the key (it used to say only
// "missing value").
TEST_F(SdkConfigTest, ReadingAnAbsentValueNamesTheTableAndTheKey) {
  Weights(dir_.path());
  sdk::Config config(host_.table(), tree_->root());
  for (auto read : std::vector<std::function<void()>>{
           [&] { config["num_pages"].as_int(); }, [&] { config["num_pages"].as_double(); },
           [&] { config["num_pages"].as_bool(); }, [&] { config["num_pages"].as_string(); }}) {
    uint32_t code = 0;
    const std::string message = ErrorOf(read, &code);
    EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_NOT_FOUND)) << message;
    EXPECT_NE(message.find("node.toml"), std::string::npos) << message;
    EXPECT_NE(message.find("missing required key 'num_pages'"), std::string::npos) << message;
  }
  // Through a table that is not there either, and past the end of an array: the nearest table
  // there is, and the keys under it.
  for (auto read :
       std::vector<std::function<void()>>{[&] { config["sampling"]["top_k"].as_int(); },
                                          [&] { config["sampling"].require("top_k"); },
                                          [&] { config["sampling"]["top_k"].at(2).as_int(); }}) {
    uint32_t code = 0;
    const std::string message = ErrorOf(read, &code);
    EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_NOT_FOUND)) << message;
    EXPECT_NE(message.find("node.toml"), std::string::npos) << message;
    EXPECT_NE(message.find("missing required key 'sampling.top_k"), std::string::npos) << message;
  }
}

// Batch sizes that are not an array (a number, a string, a table) are refused naming the key,
// not read as no buckets at all.
TEST_F(SdkConfigTest, BatchBucketsThatAreNotAnArrayAreRefused) {
  for (const char* value : {"8", "\"1,2,4\"", "{ a = 1, b = 2 }"}) {
    SCOPED_TRACE(value);
    Diagnostics d;
    auto table =
        ParseTomlText(std::string("capture_batch_sizes = ") + value + "\n", "node.toml", &d);
    ASSERT_TRUE(table.has_value());
    tree_ = std::make_shared<ConfigTree>(std::move(*table), "node.toml", "config");
    sdk::Config config(host_.table(), tree_->root());
    uint32_t code = 0;
    std::string message =
        ErrorOf([&] { sdk::BatchBuckets(config, "capture_batch_sizes", {1}); }, &code);
    EXPECT_EQ(code, static_cast<uint32_t>(MSTAR_ERR_INVALID_ARGUMENT));
    EXPECT_NE(message.find("config.capture_batch_sizes: expected an array of batch sizes"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace mstar

namespace mstar {
namespace {

// StepDecl::input_tokens reads the 1.3 field only from a declaration that has it: one filled for
// an older minor, or shorter, gives no ids even if memory past it looks like a pointer.
TEST(SdkStepDecl, InputTokensOnlyFromADeclarationThatHasTheField) {
  int64_t ids[] = {4, 5};
  int64_t shape[] = {2};
  mstar_tensor_t tensor{};
  tensor.dl.data = ids;
  tensor.dl.ndim = 1;
  tensor.dl.shape = shape;
  tensor.dl.dtype = DLDataType{kDLInt, 64, 1};
  const mstar_tensor_t* per_request[] = {&tensor};
  uint32_t tokens[] = {2};
  mstar_step_decl_t decl{};
  decl.struct_size = sizeof(decl);
  decl.struct_version = 3;
  decl.num_requests = 1;
  decl.num_tokens = tokens;
  decl.input_tokens = per_request;
  HostApi host("sdk_test");
  EXPECT_EQ(sdk::StepDecl(host.table(), &decl).input_tokens(0).raw(), &tensor);
  decl.struct_version = 2;
  EXPECT_FALSE(sdk::StepDecl(host.table(), &decl).input_tokens(0).valid());
  decl.struct_version = 3;
  decl.struct_size = offsetof(mstar_step_decl_t, input_tokens);
  EXPECT_FALSE(sdk::StepDecl(host.table(), &decl).input_tokens(0).valid());
  decl.struct_size = sizeof(decl);
  decl.input_tokens = nullptr;
  EXPECT_FALSE(sdk::StepDecl(host.table(), &decl).input_tokens(0).valid());
}

// FromVector with a shape: the shape must hold exactly the values (a shape holding fewer would
// have the copy overrun the tensor; one holding more would leave elements unwritten).
TEST(SdkTensor, FromVectorRefusesAShapeThatDoesNotHoldTheValues) {
  HostApi host("sdk_test");
  auto context = host.NewInstanceContext("t");
  const std::vector<int64_t> values = {1, 2, 3, 4};
  sdk::Tensor t = sdk::Tensor::FromVector(host.table(), context.get(), values, {2, 2});
  EXPECT_EQ(t.raw()->dl.shape[1], 2);
  EXPECT_EQ(t.data<int64_t>()[3], 4);
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{2}, {3, 2}, {-1, -4}, {int64_t{1} << 40, 1 << 30}}) {
    try {
      sdk::Tensor::FromVector(host.table(), context.get(), values, shape);
      ADD_FAILURE() << "shape of " << shape.size() << " dimensions accepted";
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.code(), MSTAR_ERR_INVALID_ARGUMENT);
      EXPECT_NE(e.message().find("for 4 values"), std::string::npos) << e.message();
    }
  }
}

// contiguous() judges as the host does: a tensor with no elements is contiguous whatever its
// strides (LibTorch gives an empty [4, 0] tensor strides [1, 1]); others by their strides.
TEST(SdkTensor, ContiguousAsTheHostJudgesIt) {
  int64_t shape[2] = {4, 0};
  int64_t strides[2] = {1, 1};
  mstar_tensor_t t{};
  t.struct_size = sizeof(t);
  t.dl.ndim = 2;
  t.dl.shape = shape;
  t.dl.strides = strides;
  EXPECT_TRUE(sdk::TensorView(&t).contiguous());
  shape[1] = 3;
  EXPECT_FALSE(sdk::TensorView(&t).contiguous());
  strides[0] = 3;
  EXPECT_TRUE(sdk::TensorView(&t).contiguous());
}

}  // namespace
}  // namespace mstar
