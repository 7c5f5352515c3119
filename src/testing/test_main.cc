// The main of every test binary (tocsin_test): GoogleTest's, except that a run whose tests all
// passed but some skipped exits kSkippedExitCode, so ctest says "Skipped" instead of "Passed".

#include <gtest/gtest.h>

#include <cstdio>

#include "testing/skip.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  if (rc != 0) return rc;
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (unit->skipped_test_count() > 0) {
    std::printf("%d test(s) skipped (see [  SKIPPED ] above for why)\n",
                unit->skipped_test_count());
    return tocsin::testing::kSkippedExitCode;
  }
  return 0;
}
