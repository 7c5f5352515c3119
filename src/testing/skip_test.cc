#include "testing/skip.h"

#include <gtest/gtest-spi.h>
#include <stdlib.h>

namespace tocsin::testing {
namespace {

// TOCSIN_NO_SKIP set for the scope of one test.
class NoSkipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* v = getenv("TOCSIN_NO_SKIP");
    if (v) saved_ = v;
    had_ = v != nullptr;
  }
  void TearDown() override {
    if (had_) {
      setenv("TOCSIN_NO_SKIP", saved_.c_str(), 1);
    } else {
      unsetenv("TOCSIN_NO_SKIP");
    }
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(NoSkipTest, ReadsTheVariable) {
  unsetenv("TOCSIN_NO_SKIP");
  EXPECT_FALSE(NoSkip());
  setenv("TOCSIN_NO_SKIP", "0", 1);
  EXPECT_FALSE(NoSkip());
  setenv("TOCSIN_NO_SKIP", "1", 1);
  EXPECT_TRUE(NoSkip());
}

void SkipWithoutFuse() {
  TOCSIN_SKIP() << "FUSE is not available here";
  ADD_FAILURE() << "TOCSIN_SKIP returned into the test";
}

TEST_F(NoSkipTest, UnderNoSkipASkipIsAFailureWithItsReason) {
  setenv("TOCSIN_NO_SKIP", "1", 1);
  EXPECT_FATAL_FAILURE(SkipWithoutFuse(), "FUSE is not available here");
  EXPECT_FATAL_FAILURE(SkipWithoutFuse(), "TOCSIN_NO_SKIP is set (CI must run this test)");
}

}  // namespace
}  // namespace tocsin::testing
