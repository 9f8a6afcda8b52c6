#include "ringmaster/core/status.h"

#include <gtest/gtest.h>

namespace ringmaster::core {
namespace {

Result<int> half(int x) {
  if (x % 2) return invalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> quarter(int x) {
  RM_ASSIGN_OR_RETURN(int h, half(x));
  RM_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

Status checkQuarter(int x) {
  RM_RETURN_IF_ERROR_CTX(quarter(x).status(), "quarter(" + std::to_string(x) + ")");
  return Status::Ok();
}

TEST(Status, ContextIsPrependedAndCodeKept) {
  Status s = checkQuarter(6);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "quarter(6): odd: 3");
  EXPECT_EQ(s.exitCode(), 1);
}

TEST(Status, OkHasExitZeroAndUsageTwo) {
  EXPECT_EQ(Status::Ok().exitCode(), 0);
  EXPECT_EQ(usageError("x").exitCode(), 2);
  EXPECT_TRUE(checkQuarter(8).ok());
}

TEST(Result, HoldsValueOrError) {
  auto r = quarter(12);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3);
  auto bad = quarter(2);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 1");
}

TEST(Result, OkStatusIsTurnedIntoInternalError) {
  Result<int> r{Status::Ok()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal);
}

TEST(Status, ErrnoErrorNamesTheCallAndMapsCodes) {
  Status s = errnoError("connect 10.0.0.1:29500", ECONNREFUSED);
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("connect 10.0.0.1:29500: Connection refused"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::core
