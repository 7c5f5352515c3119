#include "base/check_catalog.h"

#include <gtest/gtest.h>

namespace tocsin {
namespace {

constexpr CheckInfo kGood[] = {
    {"demo.port.down", Severity::kError, "warning when disabled", "a port that is down"},
    {"demo.count", Severity::kWarning, "", "fewer than expected"},
};
constexpr CheckInfo kOther[] = {{"other.thing", Severity::kInfo, "", "something"}};

TEST(CheckCatalogTest, FindsById) {
  CheckCatalog c{"demo", kGood};
  ASSERT_NE(c.Find("demo.count"), nullptr);
  EXPECT_EQ(c.Find("demo.count")->severity, Severity::kWarning);
  EXPECT_EQ(c.Find("demo.port"), nullptr);
  CheckCatalog other{"other", kOther};
  const CheckCatalog* both[] = {&c, &other};
  ASSERT_NE(FindCheck(both, "other.thing"), nullptr);
  EXPECT_EQ(FindCheck(both, "missing.id"), nullptr);
  EXPECT_TRUE(ValidateCatalogs(both).ok());
}

TEST(CheckCatalogTest, IdsAreDottedLowercaseWords) {
  EXPECT_TRUE(IsCheckId("rdma.port.link-layer"));
  EXPECT_TRUE(IsCheckId("node.fabric.idle-while-tcp-busy"));
  for (const char* bad : {"rdma", "rdma.", ".port", "rdma..port", "Rdma.port", "rdma.port_down",
                          "rdma.-port", "rdma.port.*", ""}) {
    EXPECT_FALSE(IsCheckId(bad)) << bad;
  }
}

TEST(CheckCatalogTest, RejectsBadEntries) {
  constexpr CheckInfo kBadId[] = {{"Demo.Count", Severity::kInfo, "", "x"}};
  EXPECT_FALSE(ValidateCatalog({"demo", kBadId}).ok());
  constexpr CheckInfo kTwice[] = {{"demo.a", Severity::kInfo, "", "x"},
                                  {"demo.a", Severity::kError, "", "y"}};
  EXPECT_FALSE(ValidateCatalog({"demo", kTwice}).ok());
  constexpr CheckInfo kNoMeaning[] = {{"demo.a", Severity::kInfo, "", ""}};
  EXPECT_FALSE(ValidateCatalog({"demo", kNoMeaning}).ok());
  constexpr CheckInfo kTwoLines[] = {{"demo.a", Severity::kInfo, "", "one\ntwo"}};
  EXPECT_FALSE(ValidateCatalog({"demo", kTwoLines}).ok());
  CheckCatalog a{"a", kGood};
  CheckCatalog b{"b", kGood};
  const CheckCatalog* dup[] = {&a, &b};
  Status st = ValidateCatalogs(dup);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("two catalogues"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace tocsin
