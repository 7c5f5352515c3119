#include "testing/status_matchers.h"

#include <gtest/gtest-spi.h>

namespace tocsin::testing {
namespace {

Result<int> Seven() { return 7; }
Result<int> Broken() { return Status::ParseError("line 3: not a number"); }

TEST(StatusMatchersTest, OkPasses) {
  EXPECT_OK(Status::Ok());
  ASSERT_OK(Seven());
  ASSERT_OK_AND_ASSIGN(int v, Seven());
  EXPECT_EQ(v, 7);
}

TEST(StatusMatchersTest, FailureNamesTheExpressionAndTheStatus) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Status::IoError("/sys/x: EIO")),
                          "Status::IoError(\"/sys/x: EIO\") is not ok: I/O error: /sys/x: EIO");
  EXPECT_FATAL_FAILURE(ASSERT_OK(Broken()),
                       "Broken() is not ok: parse error: line 3: not a number");
  EXPECT_FATAL_FAILURE(
      {
        ASSERT_OK_AND_ASSIGN(int v, Broken());
        (void)v;
      },
      "parse error: line 3");
}

}  // namespace
}  // namespace tocsin::testing
