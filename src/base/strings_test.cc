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

namespace tocsin {
namespace {

TEST(EscapeControlTest, ControlsAndBadBytesAreVisibleUtf8Stays) {
  EXPECT_EQ(EscapeControl("plain text"), "plain text");
  EXPECT_EQ(EscapeControl("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(EscapeControl("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
  EXPECT_EQ(EscapeControl(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(EscapeControl("\xc2\x9b" "31m"), "\\u009b" "31m");                   // C1 CSI
  EXPECT_EQ(EscapeControl("\xc3\xa9\xe2\x9c\x93\xf0\x9f\x94\x94"), "\xc3\xa9\xe2\x9c\x93\xf0\x9f\x94\x94");
  EXPECT_EQ(EscapeControl("\xff\xc3"), "\\xff\\xc3");                      // invalid, cut
  EXPECT_EQ(EscapeControl("\xe0\x80\x80"), "\\xe0\\x80\\x80");           // overlong
  EXPECT_EQ(EscapeControl("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // surrogate
}

}  // namespace
}  // namespace tocsin
