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

TEST(StringsTest, Base64RoundTripAndStrictDecoding) {
  for (std::string bytes :
       {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
        std::string("-----BEGIN CERTIFICATE-----\n"), std::string("\x00\xff\x80", 3)}) {
    auto back = DecodeBase64(EncodeBase64(bytes));
    ASSERT_TRUE(back.has_value()) << bytes;
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_EQ(EncodeBase64("foob"), "Zm9vYg==");
  EXPECT_EQ(DecodeBase64("Zm9vYmFy"), "foobar");
  for (const char* bad : {"Zm9", "Zm9v!A==", "Zg=a", "=Zg=", "Zg==Zg==", "\xff\xfe\xfd\xfc"}) {
    EXPECT_FALSE(DecodeBase64(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tocsin
