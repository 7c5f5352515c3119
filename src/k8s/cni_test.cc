#include "k8s/cni.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::k8s {
namespace {

// The shapes of docs/FORMATS.md, "NetworkAttachmentDefinition".
TEST(CniConfigTest, SinglePluginMacvlan) {
  ASSERT_OK_AND_ASSIGN(CniConfig c, ParseCniConfig(R"({"cniVersion":"0.3.1","name":"rdma-net",
    "type":"macvlan","master":"ens1f0","mode":"bridge","mtu":9000,
    "ipam":{"type":"whereabouts","range":"192.168.2.0/24"}})"));
  EXPECT_EQ(c.name, "rdma-net");
  EXPECT_EQ(c.type, "macvlan");
  EXPECT_EQ(c.master, "ens1f0");
  EXPECT_EQ(c.mtu, "9000");
  EXPECT_EQ(c.ipam_type, "whereabouts");
}

TEST(CniConfigTest, PluginListTakesTheFirstPlugin) {
  ASSERT_OK_AND_ASSIGN(CniConfig c, ParseCniConfig(R"({"cniVersion":"0.4.0","name":"ib",
    "plugins":[{"type":"ib-sriov","pkey":"0x7fff","ipam":{"type":"nv-ipam"}},
               {"type":"tuning","mtu":1500}]})"));
  EXPECT_EQ(c.name, "ib");
  EXPECT_EQ(c.type, "ib-sriov");
  EXPECT_EQ(c.master, "");
  EXPECT_EQ(c.mtu, "");
  EXPECT_EQ(c.ipam_type, "nv-ipam");
}

TEST(CniConfigTest, HostDeviceAndStringMtu) {
  ASSERT_OK_AND_ASSIGN(
      CniConfig c,
      ParseCniConfig(
          R"({"type":"host-device","device":"ib0","mtu":"4092","ipam":{"type":"dhcp"}})"));
  EXPECT_EQ(c.master, "ib0");
  EXPECT_EQ(c.mtu, "4092");
}

TEST(CniConfigTest, HostileInputIsAnErrorNamingIt) {
  EXPECT_FALSE(ParseCniConfig("").ok());
  EXPECT_FALSE(ParseCniConfig("[1,2]").ok());
  EXPECT_FALSE(ParseCniConfig(R"({"type":7})").ok());
  EXPECT_FALSE(ParseCniConfig(R"({"type":"macvlan",)").ok());
  EXPECT_FALSE(ParseCniConfig(R"({"mtu":{"a":1}})").ok());
  EXPECT_FALSE(ParseCniConfig(std::string(kMaxCniConfig + 1, ' ')).ok());
  auto deep = ParseCniConfig(std::string(100000, '[') + std::string(100000, ']'));
  ASSERT_FALSE(deep.ok());
  auto bad = ParseCniConfig("{not json}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("{not json}"), std::string::npos);
}

}  // namespace
}  // namespace tocsin::k8s
