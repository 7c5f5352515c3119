#include "rdma/sysfs_parse.h"

#include <gtest/gtest.h>

namespace tocsin::rdma {
namespace {

TEST(RdmaParseTest, CodedStates) {
  auto s = ParseCodedState("4: ACTIVE\n");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->code, 4);
  EXPECT_EQ(s->name, "ACTIVE");
  auto p = ParseCodedState("4: PortConfigurationTraining\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "PortConfigurationTraining");
  EXPECT_EQ(ParseCodedState("7: Phy Test\n")->name, "Phy Test");
  EXPECT_EQ(ParseCodedState("9: <unknown>\n")->code, 9);
  EXPECT_FALSE(ParseCodedState("ACTIVE").ok());
  EXPECT_FALSE(ParseCodedState("x: ACTIVE").ok());
  EXPECT_FALSE(ParseCodedState("4:").ok());
  EXPECT_FALSE(ParseCodedState("").ok());
}

TEST(RdmaParseTest, Rates) {
  auto r = ParseRate("200 Gb/sec (4X HDR)\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gbps, 200);
  EXPECT_EQ(r->width, 4);
  EXPECT_EQ(r->speed, "HDR");
  EXPECT_EQ(ParseRate("2.5 Gb/sec (1X SDR)")->gbps, 2.5);
  EXPECT_EQ(ParseRate("400 Gb/sec (4X NDR)")->speed, "NDR");
  EXPECT_EQ(ParseRate("100 Gb/sec (2X HDR)")->width, 2);
  auto old = ParseRate("10 Gb/sec (4X)");  // very old kernels: no SDR suffix
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->speed, "");
  EXPECT_FALSE(ParseRate("fast").ok());
  EXPECT_FALSE(ParseRate("200 Gb/sec (HDR)").ok());
  EXPECT_FALSE(ParseRate("-5 Gb/sec (4X HDR)").ok());
}

TEST(RdmaParseTest, CountersSaturateByWidth) {
  auto c = ParseCounter("symbol_error", "12\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->value, 12u);
  EXPECT_FALSE(c->saturated);
  EXPECT_TRUE(ParseCounter("symbol_error", "65535")->saturated);
  EXPECT_TRUE(ParseCounter("link_downed", "255")->saturated);
  EXPECT_TRUE(ParseCounter("local_link_integrity_errors", "15")->saturated);
  EXPECT_FALSE(ParseCounter("local_link_integrity_errors", "16").ok());  // not a 4-bit value
  EXPECT_TRUE(ParseCounter("port_xmit_data", "4294967295")->saturated);
  EXPECT_FALSE(ParseCounter("port_xmit_data", "4294967296")->saturated);  // extended, 64-bit
  auto na = ParseCounter("port_rcv_data", "N/A (no PMA)\n");
  ASSERT_TRUE(na.ok());
  EXPECT_FALSE(na->value.has_value());
  EXPECT_FALSE(ParseCounter("symbol_error", "-1").ok());
  EXPECT_FALSE(ParseCounter("symbol_error", "abc").ok());
}

TEST(RdmaParseTest, GidsAndGuids) {
  EXPECT_TRUE(ParseGid("fe80:0000:0000:0000:0c42:a103:00e4:9b6a\n").ok());
  EXPECT_TRUE(ParseGid("0000:0000:0000:0000:0000:ffff:0a00:0001").ok());
  EXPECT_FALSE(ParseGid("fe80::c42:a103:e4:9b6a").ok());  // kernel never compresses
  EXPECT_TRUE(IsZeroGid("0000:0000:0000:0000:0000:0000:0000:0000"));
  EXPECT_FALSE(IsZeroGid("fe80:0000:0000:0000:0c42:a103:00e4:9b6a"));
  EXPECT_EQ(*ParseGuid("0c42:a103:00e4:9b6a\n"), "0c42:a103:00e4:9b6a");
  EXPECT_FALSE(ParseGuid("0c42:a103:00e4").ok());
}

}  // namespace
}  // namespace tocsin::rdma
