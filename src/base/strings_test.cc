#include "base/strings.h"

#include <gtest/gtest.h>

namespace tocsin {
namespace {

TEST(StringsTest, TrimAndSplit) {
  EXPECT_EQ(Trim("  4: ACTIVE\n"), "4: ACTIVE");
  EXPECT_EQ(Trim("\n\t"), "");
  auto parts = Split("a::b", ':');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(Split("a::b", ':', true).size(), 2u);
  auto ws = SplitWhitespace("  read_bytes   12 samples [bytes]\n");
  ASSERT_EQ(ws.size(), 4u);
  EXPECT_EQ(ws[3], "[bytes]");
}

TEST(StringsTest, NumbersAreWholeString) {
  EXPECT_EQ(ParseInt64("-1"), -1);
  EXPECT_FALSE(ParseInt64("12abc"));
  EXPECT_FALSE(ParseInt64(""));
  EXPECT_FALSE(ParseUint64("-1"));
  EXPECT_FALSE(ParseUint64("18446744073709551616"));  // overflow
  EXPECT_EQ(ParseUint64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseHex("0x10de"), 0x10deu);
  EXPECT_EQ(ParseHex("030200"), 0x030200u);
  EXPECT_FALSE(ParseHex("0x"));
  EXPECT_EQ(ParseDouble("2.5"), 2.5);
  EXPECT_FALSE(ParseDouble("2.5x"));
}

TEST(StringsTest, QuoteEscapesAndCuts) {
  EXPECT_EQ(Quote("a\x01\"b"), "\"a\\x01\\\"b\"");
  EXPECT_EQ(Quote("abcdef", 3), "\"abc...\"");
}

}  // namespace
}  // namespace tocsin
