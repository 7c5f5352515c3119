#include "base/escape.h"

#include <gtest/gtest.h>

namespace tocsin {
namespace {

TEST(EscapeTest, PercentEncodeKeepsOnlyUnreserved) {
  EXPECT_EQ(PercentEncode("rate(x[5m]) > 0.5"), "rate%28x%5B5m%5D%29%20%3E%200.5");
  EXPECT_EQ(PercentEncode("a-b.c_d~e"), "a-b.c_d~e");
  EXPECT_EQ(PercentEncode(std::string("\xff\x00{\"", 4)), "%FF%00%7B%22");
}

TEST(EscapeTest, XmlEscapeEntitiesAndForbiddenControls) {
  EXPECT_EQ(XmlEscape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
  EXPECT_EQ(XmlEscape(std::string("a\tb\nc\x01" "d\x1b", 8)), "a\tb\nc?d?");
}

}  // namespace
}  // namespace tocsin
