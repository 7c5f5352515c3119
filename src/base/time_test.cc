#include "base/time.h"

#include <gtest/gtest.h>

namespace tocsin {
namespace {

TEST(TimeTest, FormatsUtc) {
  EXPECT_EQ(FormatRfc3339(FromUnixSeconds(0)), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(FromUnixSeconds(1754000000)), "2025-07-31T22:13:20Z");
}

TEST(TimeTest, ParsesRoundTripAndOffsets) {
  auto t = ParseRfc3339("2025-07-31T22:13:20Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, FromUnixSeconds(1754000000));
  EXPECT_EQ(*ParseRfc3339("2025-07-31T23:13:20.123+01:00"), FromUnixSeconds(1754000000));
  EXPECT_FALSE(ParseRfc3339("2025-02-30T00:00:00Z"));
  EXPECT_FALSE(ParseRfc3339("yesterday"));
  EXPECT_FALSE(ParseRfc3339("2025-07-31T22:13:20"));
  EXPECT_FALSE(ParseRfc3339("9999-12-31T23:59:59Z"));  // found by fuzz_k8s_decode: overflow
  EXPECT_TRUE(IsRepresentableUnixSeconds(1764300000));
  EXPECT_FALSE(IsRepresentableUnixSeconds(999999999999));
}

TEST(TimeTest, ParsesDurations) {
  using std::chrono::milliseconds;
  EXPECT_EQ(ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(ParseDuration("15s"), milliseconds(15000));
  EXPECT_EQ(ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(ParseDuration("30"), milliseconds(30000));
  EXPECT_EQ(ParseDuration("2m"), milliseconds(120000));
  EXPECT_EQ(ParseDuration("1h"), milliseconds(3600000));
  for (const char* bad : {"", "s", "-1s", "1d", "1..5s", "10 s", "25h", "abc"}) {
    EXPECT_FALSE(ParseDuration(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tocsin
