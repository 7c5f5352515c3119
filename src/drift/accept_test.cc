#include "drift/accept.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::drift {
namespace {

TEST(AcceptTest, ParsesListAndMap) {
  ASSERT_OK_AND_ASSIGN(auto list, ParseAcceptFile(R"(
- match: drift.node.software
  reason: kubelet upgrade rolls out to staging first
  expires: 2026-12-31
- match: {check: "drift.plugin.*", subject: "device plugin k8s-rdma-*"}
  reason: v1.5.2 under test
  expires: 2026-12-01T12:00:00Z
)"));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].check, "drift.node.software");
  EXPECT_EQ(list[0].subject, "*");
  EXPECT_EQ(FormatRfc3339(list[0].expires), "2026-12-31T23:59:59Z");
  EXPECT_EQ(list[1].subject, "device plugin k8s-rdma-*");
  ASSERT_OK_AND_ASSIGN(auto map, ParseAcceptFile("accept:\n  - match: x.y\n    reason: r\n"
                                                 "    expires: 2027-01-01\n"));
  EXPECT_EQ(map.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto empty, ParseAcceptFile(""));
  EXPECT_TRUE(empty.empty());
}

TEST(AcceptTest, BadEntriesNameTheEntry) {
  for (const char* bad :
       {"- match: a\n  expires: 2026-01-01\n", "- match: a\n  reason: r\n",
        "- match: a\n  reason: r\n  expires: soon\n", "- reason: r\n  expires: 2026-01-01\n",
        "- match: {check: a, node: b}\n  reason: r\n  expires: 2026-01-01\n", "- 7\n", "other: 1\n",
        "[[[", "accept: 3\n"}) {
    auto r = ParseAcceptFile(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto r = ParseAcceptFile("- match: a\n  reason: r\n- match: b\n  reason: r\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 1"), std::string::npos);
  EXPECT_FALSE(ParseAcceptFile(std::string(1000, '[')).ok());
  EXPECT_FALSE(ParseAcceptFile(std::string(1000, '-') + " x").ok());
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += std::string(static_cast<size_t>(i), ' ') + "- \n";
  EXPECT_FALSE(ParseAcceptFile(deep).ok());
}

TEST(AcceptTest, UnknownKeysAtEveryLevelAreErrorsNamingKeyAndEntry) {
  // subject beside match, not inside it: the entry would accept every subject.
  auto r = ParseAcceptFile(
      "- match: drift.node.software\n  reason: r\n  expires: 2026-01-01\n"
      "- match: drift.plugin.image\n  subject: device plugin x\n  reason: r\n"
      "  expires: 2026-01-01\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 2: unknown key \"subject\""), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("inside match"), std::string::npos) << r.status().message();
  r = ParseAcceptFile("- match: a\n  reason: r\n  expire: 2026-01-01\n  expires: 2026-01-01\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 1: unknown key \"expire\""), std::string::npos)
      << r.status().message();
  r = ParseAcceptFile("- match: {check: a, node: b}\n  reason: r\n  expires: 2026-01-01\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 1: match: unknown key \"node\""), std::string::npos)
      << r.status().message();
  r = ParseAcceptFile("accept: []\naccepts: []\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown key \"accepts\""), std::string::npos)
      << r.status().message();
}

TEST(AcceptTest, AcceptedUntilExpiry) {
  Finding f{"drift.plugin.image", Severity::kWarning, "device plugin k8s-rdma-shared-dev-plugin",
            "runs v1 and v2",     std::nullopt,       {{"a", "v1"}}};
  ASSERT_OK_AND_ASSIGN(auto acc, ParseAcceptFile("- match: {check: drift.plugin.image}\n"
                                                 "  reason: canary\n  expires: 2026-12-01\n"));
  std::vector<Finding> before = {f};
  ApplyAcceptances(before, acc, *ParseRfc3339("2026-12-01T10:00:00Z"));
  EXPECT_EQ(before[0].severity, Severity::kInfo);
  EXPECT_EQ(before[0].evidence["accepted"]["severity"], "warning");
  EXPECT_EQ(before[0].evidence["accepted"]["reason"], "canary");
  EXPECT_EQ(before[0].message.rfind("accepted until 2026-12-01T23:59:59Z (canary): ", 0), 0u);
  std::vector<Finding> after = {f};
  ApplyAcceptances(after, acc, *ParseRfc3339("2026-12-02T00:00:00Z"));
  EXPECT_EQ(after[0].severity, Severity::kWarning);
  EXPECT_EQ(after[0].evidence["acceptance_expired"], "2026-12-01T23:59:59Z");
  std::vector<Finding> other = {f};
  other[0].subject = "network x";
  ASSERT_OK_AND_ASSIGN(auto subj, ParseAcceptFile("- match: {subject: \"device plugin *\"}\n"
                                                  "  reason: r\n  expires: 2030-01-01\n"));
  ApplyAcceptances(other, subj, *ParseRfc3339("2026-12-02T00:00:00Z"));
  EXPECT_EQ(other[0].severity, Severity::kWarning);
}

}  // namespace
}  // namespace tocsin::drift
