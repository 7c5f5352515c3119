#pragma once

// Skipping a test that needs what this host may lack (root, FUSE, network namespaces):
//
//   if (!fuse_works) TOCSIN_SKIP() << "FUSE is not available here";
//
// skips it with the reason (GTEST_SKIP; the test binary then exits 77, which ctest reports as
// "Skipped", not "Passed"), except under TOCSIN_NO_SKIP=1 (CI, as root, where each of these must
// run): there the test fails with the reason instead.

#include <gtest/gtest.h>

namespace tocsin::testing {

// TOCSIN_NO_SKIP is set to something other than "" or "0".
bool NoSkip();

// What a test binary whose tests all passed but some skipped exits with (ctest SKIP_RETURN_CODE).
inline constexpr int kSkippedExitCode = 77;

}  // namespace tocsin::testing

// One statement for both outcomes, so that what the caller streams is the message of either (an
// if/else of GTEST_FAIL and GTEST_SKIP would give it to the second only). Like GTEST_SKIP, it
// returns from the (void) function it is in.
#define TOCSIN_SKIP()                                                                   \
  return ::testing::internal::AssertHelper(                                             \
             ::tocsin::testing::NoSkip() ? ::testing::TestPartResult::kFatalFailure     \
                                         : ::testing::TestPartResult::kSkip,            \
             __FILE__, __LINE__,                                                        \
             ::tocsin::testing::NoSkip()                                                \
                 ? "would skip, but TOCSIN_NO_SKIP is set (CI must run this test); why" \
                 : "") = ::testing::Message()
