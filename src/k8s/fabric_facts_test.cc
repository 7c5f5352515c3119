#include "k8s/fabric_facts.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::k8s {
namespace {

TEST(FabricFactsTest, RoundTrip) {
  FabricFacts f;
  f.driver = "24.10-0.7.0";
  f.hcas.push_back(
      {"mlx5_0", "28.39.1002", "MT_0000000838", "InfiniBand", "400 Gb/sec (4X NDR)", "4096"});
  ASSERT_OK_AND_ASSIGN(FabricFacts back, DecodeFabricFacts(EncodeFabricFacts(f)));
  EXPECT_EQ(back.driver, f.driver);
  ASSERT_EQ(back.hcas.size(), 1u);
  EXPECT_EQ(back.hcas[0].firmware, "28.39.1002");
  EXPECT_EQ(back.hcas[0].rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(back.hcas[0].mtu, "4096");
}

// What the driver wrote is not ours: bytes that are not UTF-8 and the most a node can have still
// encode (never throw, which would fail the agent's rdma task) into what the decoder accepts.
TEST(FabricFactsTest, WhateverSysfsHoldsEncodesToWhatDecodes) {
  FabricFacts f;
  f.driver = "24.10";
  f.hcas.push_back({"mlx5_0", std::string("28.39.\xff\xfe" "1000"), "MT_1", "InfiniBand", "400", ""});
  std::string text = EncodeFabricFacts(f);
  ASSERT_OK_AND_ASSIGN(FabricFacts back, DecodeFabricFacts(text));
  ASSERT_EQ(back.hcas.size(), 1u);
  EXPECT_EQ(back.hcas[0].firmware, "28.39.\xEF\xBF\xBD\xEF\xBF\xBD" "1000");  // U+FFFD each

  FabricFacts big;
  for (int i = 0; i < 200; ++i) {
    std::string s(128, 'x');
    big.hcas.push_back({"mlx5_" + std::to_string(i), s, s, s, s, s});
  }
  text = EncodeFabricFacts(big);
  EXPECT_LE(text.size(), kMaxFabricFactsBytes);
  ASSERT_OK_AND_ASSIGN(back, DecodeFabricFacts(text));
  EXPECT_GT(back.hcas.size(), 0u);
  EXPECT_LE(back.hcas.size(), kMaxFabricHcas);
}

TEST(FabricFactsTest, HostileInputIsCappedOrRefused) {
  EXPECT_FALSE(DecodeFabricFacts("").ok());
  EXPECT_FALSE(DecodeFabricFacts("[]").ok());
  EXPECT_FALSE(DecodeFabricFacts(R"({"v":2})").ok());
  EXPECT_FALSE(DecodeFabricFacts(std::string(kMaxFabricFactsBytes + 1, ' ')).ok());
  std::string deep = R"({"v":1,"hcas":[{"name":)" + std::string(5000, '[') + "]}";
  EXPECT_FALSE(DecodeFabricFacts(deep).ok());
  std::string many = R"({"v":1,"hcas":[)";
  for (int i = 0; i < 100; ++i) many += std::string(i ? "," : "") + R"({"name":"x","fw":7})";
  many += "]}";
  ASSERT_OK_AND_ASSIGN(FabricFacts f, DecodeFabricFacts(many));
  EXPECT_EQ(f.hcas.size(), kMaxFabricHcas);
  EXPECT_EQ(f.hcas[0].firmware, "");  // not a string: absent
  ASSERT_OK_AND_ASSIGN(FabricFacts lng,
                       DecodeFabricFacts(R"({"v":1,"driver":")" + std::string(500, 'a') + "\"}"));
  EXPECT_EQ(lng.driver.size(), 128u);
}

}  // namespace
}  // namespace tocsin::k8s
