#include "bench/harness.h"

#include <gtest/gtest.h>

namespace tocsin::bench {
namespace {

TEST(HarnessTest, StragglersAreUnderTheRatioOfTheMedian) {
  Stragglers s = FindStragglers({10, 9, 4.7, 11}, 0.5);
  EXPECT_DOUBLE_EQ(s.median, 9.5);
  EXPECT_EQ(s.slow, std::vector<size_t>{2});
  EXPECT_TRUE(FindStragglers({10, 9, 5, 11}, 0.5).slow.empty());  // 5 is not under 4.75
}

TEST(HarnessTest, TwoValuesNameNoStraggler) {
  Stragglers s = FindStragglers({10, 1}, 0.5);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_TRUE(s.slow.empty());
  EXPECT_TRUE(FindStragglers({}, 0.5).slow.empty());
}

TEST(HarnessTest, RankFailedNamesTheCulpritOrTheJob) {
  Finding f = RankFailedFinding("storage.rank.failed", "rank 2 went away", 1);
  EXPECT_EQ(f.check, "storage.rank.failed");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_EQ(f.subject, "job");
  EXPECT_EQ(f.message, "rank 2 went away");
  EXPECT_EQ(f.evidence["reported_by_rank"], 1);
  EXPECT_EQ(RankFailedFinding("net.rank.failed", "x", 0, "rank 2 (b 10.0.0.2)").subject,
            "rank 2 (b 10.0.0.2)");
}

TEST(HarnessTest, HeaderAndRanks) {
  Report r = BenchReport("bench storage", "node-a");
  EXPECT_EQ(r.command, "bench storage");
  EXPECT_EQ(r.host, "node-a");
  EXPECT_NE(r.generated_at.time_since_epoch().count(), 0);
  std::vector<ranks::Peer> peers = {{0, "a", "10.0.0.1", "", "node-a", false},
                                    {1, "b", "10.0.0.2", "", "", true}};
  Table t = SetupTable(peers, "2 ranks");
  EXPECT_EQ(t.title, "SETUP");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"1", "b", "10.0.0.2"}));
  EXPECT_EQ(t.notes, std::vector<std::string>{"2 ranks"});
  nlohmann::json j = RanksJson(peers);
  EXPECT_EQ(j[0]["node"], "node-a");
  EXPECT_TRUE(j[1]["node"].is_null());
  EXPECT_EQ(j[1]["node_dropped"], true);
}

}  // namespace
}  // namespace tocsin::bench
