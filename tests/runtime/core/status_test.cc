// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

#include <gtest/gtest.h>

namespace mstar {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  MSTAR_ASSIGN_OR_RETURN(int half, Half(x));
  MSTAR_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = NotFound("no such thing");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no such thing");
  EXPECT_EQ(s.WithContext("loading x").message(), "loading x: no such thing");
  EXPECT_EQ(Status::Ok().WithContext("ignored").ToString(), "OK");
}

TEST(Status, CopiesAndMovesKeepTheMessage) {
  Status error = Internal("broken");
  Status copy = error;  // a deep copy: each owns its message
  EXPECT_EQ(copy.code(), Code::kInternal);
  EXPECT_EQ(copy.message(), "broken");
  Status assigned;
  assigned = error;
  EXPECT_EQ(assigned.message(), "broken");
  const Status& same = assigned;
  assigned = same;  // self-assignment keeps it
  EXPECT_EQ(assigned.message(), "broken");
  Status moved = std::move(error);
  EXPECT_EQ(moved.message(), "broken");
  EXPECT_EQ(copy.message(), "broken");  // untouched by the move of its source
  assigned = Status::Ok();
  EXPECT_TRUE(assigned.ok());
  EXPECT_EQ(assigned.message(), "");
  EXPECT_EQ(Status(Code::kCancelled, "").message(), "");  // an error may have no message
  EXPECT_FALSE(Status(Code::kCancelled, "").ok());
}

TEST(Status, CodesMatchTheAbi) {
  EXPECT_EQ(static_cast<uint32_t>(Code::kDataLoss), MSTAR_ERR_DATA_LOSS);
  EXPECT_EQ(CodeFromAbi(MSTAR_ERR_IO), Code::kIo);
  EXPECT_EQ(CodeFromAbi(9999), Code::kInternal);  // unknown codes are internal errors
}

TEST(Result, PropagatesTheFirstError) {
  EXPECT_EQ(Quarter(8).value(), 2);
  Result<int> odd = Quarter(6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "3 is odd");
}

// A Result made from an OK status (a caller's bug) is a failure, never an OK status without a
// value that the next caller would pass on as success.
TEST(Result, MadeFromAnOkStatusIsAnInternalError) {
  Result<int> result = Status::Ok();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kInternal);
  EXPECT_EQ(result.status().message(), "a Result was made from an OK status");
}

}  // namespace
}  // namespace mstar
