#include "canary/attribution.h"

#include <gtest/gtest.h>

#include "canary/testing.h"

namespace tocsin::canary {
namespace {

using namespace testing;  // NOLINT

class AttributionTest : public ::testing::Test {
 protected:
  // Two blocks of four: x0..x3 in b00, y0..y3 in b01.
  AttributionTest() : all_(Grid(2, 4)) {
    for (int i = 0; i < 4; ++i) {
      x_[i] = all_[static_cast<size_t>(i)];
      y_[i] = all_[static_cast<size_t>(4 + i)];
    }
  }
  void Add(const PairResult& r) { ASSERT_TRUE(Record(h_, r, kWindow).ok()); }
  // Round 0: everyone passes within its block.
  void AllPassIntra(TimePoint at) {
    Add(Pass(x_[0], x_[1], at));
    Add(Pass(x_[2], x_[3], at));
    Add(Pass(y_[0], y_[1], at));
    Add(Pass(y_[2], y_[3], at));
  }
  Verdicts V(TimePoint now) const { return Attribute(all_, h_, now); }
  // No verdict and no suspect left.
  void ExpectSettledClean(TimePoint now) const {
    Verdicts v = V(now);
    EXPECT_TRUE(v.nodes.empty());
    EXPECT_TRUE(v.block_pairs.empty());
    EXPECT_TRUE(v.suspects.empty());
  }

  std::vector<NodeInfo> all_;
  NodeInfo x_[4], y_[4];
  History h_;
};

TEST_F(AttributionTest, NodeFaultBlamesAtOnceAndOnlyThatNode) {
  Add(Result(x_[0], y_[0], Outcome::kNodeFault, T(10), "canary.rank-failed", x_[0].name));
  Verdicts v = V(T(10));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].node, x_[0].name);
  EXPECT_EQ(v.nodes[0].cause, "canary.rank-failed");
  EXPECT_EQ(v.nodes[0].since, T(10));
  EXPECT_EQ(v.nodes[0].partners, std::vector<std::string>{y_[0].name});
  EXPECT_TRUE(v.block_pairs.empty());
  EXPECT_TRUE(v.suspects.empty());
}

TEST_F(AttributionTest, FaultyNodeBlamedByRetestWithSameBlockGoodPartner) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], y_[0], T(100)));
  Verdicts v = V(T(100));
  EXPECT_TRUE(v.nodes.empty()) << "one failure between two good nodes decides nothing";
  ASSERT_EQ(v.suspects.size(), 1u);
  EXPECT_EQ(v.suspects[0].a, x_[0].name);
  // The re-tests: x0 with x1 (same block) fails, y0 with y1 passes.
  Add(Fail(x_[0], x_[1], T(200)));
  Add(Pass(y_[0], y_[1], T(200)));
  v = V(T(200));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].node, x_[0].name);
  EXPECT_EQ(v.nodes[0].cause, "canary.transport.not-rdma");
  EXPECT_EQ(v.nodes[0].since, T(100));
  EXPECT_TRUE(v.block_pairs.empty());
  EXPECT_TRUE(v.suspects.empty());
}

TEST_F(AttributionTest, RetestOrderDoesNotMatter) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], y_[0], T(100)));
  Add(Pass(y_[0], y_[1], T(200)));  // the pass first this time
  Add(Fail(x_[0], x_[1], T(200)));
  Verdicts v = V(T(200));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].node, x_[0].name);
  EXPECT_TRUE(v.suspects.empty());
}

TEST_F(AttributionTest, FaultyBlockPairBlamedWhenBothSidesPassElsewhere) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], y_[0], T(100), "canary.busbw.low"));
  Add(Fail(x_[1], y_[1], T(100), "canary.busbw.low"));
  Add(Pass(x_[0], x_[2], T(200)));
  Add(Pass(y_[0], y_[2], T(200)));
  Verdicts v = V(T(200));
  EXPECT_TRUE(v.nodes.empty());
  ASSERT_EQ(v.block_pairs.size(), 1u);
  EXPECT_EQ(v.block_pairs[0].block_a, "b00");
  EXPECT_EQ(v.block_pairs[0].block_b, "b01");
  EXPECT_EQ(v.block_pairs[0].cause, "canary.busbw.low");
  EXPECT_EQ(v.block_pairs[0].since, T(100));
  EXPECT_EQ(v.block_pairs[0].pairs, (std::vector<NodePair>{{x_[0].name, y_[0].name}}));
  ASSERT_EQ(v.suspects.size(), 1u) << "x1/y1 not re-tested yet";
  // Both nodes of a pair passing without a pass across: the block pair, never the nodes.
  Add(Pass(x_[1], x_[3], T(300)));
  Add(Pass(y_[1], y_[3], T(300)));
  v = V(T(300));
  EXPECT_TRUE(v.nodes.empty());
  ASSERT_EQ(v.block_pairs.size(), 1u);
  EXPECT_EQ(v.block_pairs[0].pairs.size(), 2u);
  EXPECT_EQ(v.block_pairs[0].since, T(100));
  EXPECT_TRUE(v.suspects.empty());
}

TEST_F(AttributionTest, NoBlameAcrossABlockPairThatHasNotPassedSince) {
  AllPassIntra(T(0));
  // y0 passes after the failure, x0 is not re-tested: the path between b00 and b01 is in doubt,
  // so x0 is not blamed.
  Add(Fail(x_[0], y_[0], T(100)));
  Add(Pass(y_[0], y_[1], T(200)));
  Verdicts v = V(T(200));
  EXPECT_TRUE(v.nodes.empty());
  EXPECT_EQ(v.suspects.size(), 1u);
  // Once a pair across the two blocks passes, the path is cleared and x0 is to blame.
  Add(Pass(x_[2], y_[2], T(300)));
  v = V(T(300));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].node, x_[0].name);
}

TEST_F(AttributionTest, TwoGoodNodesFailingOnlyWithEachOtherBlameNeither) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], x_[1], T(100)));  // same block, both passed before
  Verdicts v = V(T(100));
  EXPECT_TRUE(v.nodes.empty());
  EXPECT_EQ(v.suspects.size(), 1u);
}

TEST_F(AttributionTest, NeverPassedPartnerIsNotGood) {
  Add(Fail(x_[0], x_[1], T(100)));
  Add(Fail(x_[0], x_[2], T(200)));
  Verdicts v = V(T(200));
  EXPECT_TRUE(v.nodes.empty()) << "no partner ever passed";
  EXPECT_EQ(v.suspects.size(), 2u);
}

TEST_F(AttributionTest, BothExoneratedInOneBlockIsATransient) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], x_[1], T(100)));
  Add(Pass(x_[0], x_[2], T(200)));
  Add(Pass(x_[1], x_[3], T(200)));
  ExpectSettledClean(T(200));
}

TEST_F(AttributionTest, BothExoneratedAcrossAPassedBlockPairIsATransient) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], y_[0], T(100)));
  Add(Pass(x_[1], y_[1], T(150)));  // the path passed after the failure
  Add(Pass(x_[0], x_[2], T(200)));
  Add(Pass(y_[0], y_[2], T(200)));
  ExpectSettledClean(T(200));
}

TEST_F(AttributionTest, PassClearsVerdicts) {
  AllPassIntra(T(0));
  Add(Result(x_[0], x_[1], Outcome::kNodeFault, T(100), "canary.rank-failed", x_[0].name));
  Add(Fail(x_[2], y_[2], T(100)));
  Add(Pass(x_[2], x_[3], T(200)));
  Add(Pass(y_[2], y_[3], T(200)));
  Verdicts v = V(T(200));
  ASSERT_EQ(v.nodes.size(), 1u);
  ASSERT_EQ(v.block_pairs.size(), 1u);
  Add(Pass(x_[0], x_[1], T(300)));  // fixed
  Add(Pass(x_[1], y_[1], T(300)));  // a pass across the block pair
  v = V(T(300));
  EXPECT_TRUE(v.nodes.empty());
  EXPECT_TRUE(v.block_pairs.empty());
  EXPECT_EQ(LastPass(h_, x_[0].name), T(300));
}

TEST_F(AttributionTest, SinceIsTheOnsetKeptAcrossRounds) {
  AllPassIntra(T(0));
  for (int round = 1; round <= 5; ++round) {
    Add(Result(x_[0], x_[1], Outcome::kNodeFault, T(100 * round), "canary.rank-failed",
               x_[0].name));
    Add(Fail(x_[2], y_[2], T(100 * round)));
    Add(Pass(x_[2], x_[3], T(100 * round + 50)));
    Add(Pass(y_[2], y_[3], T(100 * round + 50)));
  }
  Verdicts v = V(T(600));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].since, T(100));
  ASSERT_EQ(v.block_pairs.size(), 1u);
  EXPECT_EQ(v.block_pairs[0].since, T(100));
  // After a pass, the next failure starts a new streak.
  Add(Pass(x_[0], x_[1], T(700)));
  Add(Result(x_[0], x_[1], Outcome::kNodeFault, T(800), "canary.rank-failed", x_[0].name));
  v = V(T(800));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].since, T(800));
}

TEST_F(AttributionTest, RecordPrunesFailuresOlderThanTheWindow) {
  AllPassIntra(T(0));
  Add(Fail(x_[0], x_[1], T(100)));
  EXPECT_EQ(h_.failures.size(), 1u);
  Add(Pass(y_[0], y_[1], T(100) + kWindow));  // still within
  EXPECT_EQ(h_.failures.size(), 1u);
  Add(Pass(y_[0], y_[1], T(101) + kWindow));
  EXPECT_TRUE(h_.failures.empty());
  EXPECT_TRUE(V(T(101) + kWindow).suspects.empty());
  // Last passes are kept for kStaleWindows windows, then pruned.
  TimePoint later = T(0) + kStaleWindows * kWindow + std::chrono::seconds(1);
  Add(Pass(y_[2], y_[3], later));
  PruneStale(h_, later - std::chrono::seconds(2), kWindow);
  EXPECT_TRUE(LastPass(h_, x_[2].name).has_value());
  PruneStale(h_, later, kWindow);
  EXPECT_FALSE(LastPass(h_, x_[2].name).has_value());
  EXPECT_TRUE(LastPass(h_, y_[2].name).has_value());
}

TEST_F(AttributionTest, RecordRejectsMalformedResults) {
  EXPECT_FALSE(Record(h_, Pass(x_[0], x_[0], T(1)), kWindow).ok());
  EXPECT_FALSE(Record(h_, Fail(x_[0], x_[1], T(1), ""), kWindow).ok());
  EXPECT_FALSE(
      Record(h_, Result(x_[0], x_[1], Outcome::kNodeFault, T(1), "c", y_[0].name), kWindow).ok());
  EXPECT_FALSE(Record(h_, Pass({"", "b00"}, x_[1], T(1)), kWindow).ok());
  EXPECT_TRUE(h_.nodes.empty());
}

TEST_F(AttributionTest, RecordRoundMatchesRecordAndReportsRejects) {
  AllPassIntra(T(0));
  std::vector<PairResult> round = {Fail(x_[0], y_[0], T(100)), Fail(x_[1], y_[1], T(100))};
  ASSERT_TRUE(RecordRound(h_, round, kWindow).ok());
  EXPECT_EQ(V(T(100)).suspects.size(), 2u);
  // Re-tests: x0 fails in its block (blamed), y0 passes, x1 and y1 pass (a block-pair verdict
  // needs the pair across to have failed with both sides passing elsewhere: x1/y1).
  round = {Fail(x_[0], x_[2], T(200)), Pass(y_[0], y_[2], T(200)), Pass(x_[1], x_[3], T(200)),
           Pass(y_[1], y_[3], T(200)), Pass(x_[0], x_[0], T(200))};
  Status s = RecordRound(h_, round, kWindow);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1 of 5 results rejected"), std::string::npos) << s.message();
  Verdicts v = V(T(200));
  ASSERT_EQ(v.nodes.size(), 1u);
  EXPECT_EQ(v.nodes[0].node, x_[0].name);
  ASSERT_EQ(v.block_pairs.size(), 1u);
  EXPECT_EQ(v.block_pairs[0].pairs, (std::vector<NodePair>{{x_[1].name, y_[1].name}}));
  EXPECT_TRUE(v.suspects.empty());
}

TEST_F(AttributionTest, RecordNormalisesThePair) {
  Add(Fail(y_[0], x_[0], T(1)));
  ASSERT_EQ(h_.failures.size(), 1u);
  EXPECT_EQ(h_.failures[0].a, x_[0].name);
  EXPECT_EQ(h_.failures[0].block_a, "b00");
  EXPECT_EQ(h_.failures[0].block_b, "b01");
}

TEST_F(AttributionTest, AttributeLeavesOutNodesNoLongerThere) {
  Add(Result(x_[0], x_[1], Outcome::kNodeFault, T(1), "canary.rank-failed", x_[0].name));
  std::vector<NodeInfo> without(all_.begin() + 1, all_.end());
  EXPECT_TRUE(Attribute(without, h_, T(1)).nodes.empty());
  EXPECT_EQ(Attribute(all_, h_, T(1)).nodes.size(), 1u);
}

TEST_F(AttributionTest, Coverage) {
  std::vector<NodeInfo> all = Grid(3, 2);  // 6 nodes, 3 block pairs
  Coverage c = ComputeCoverage(all, h_, T(0), kWindow);
  EXPECT_EQ(c.nodes_total, 6u);
  EXPECT_EQ(c.block_pairs_total, 3u);
  EXPECT_EQ(c.node_ratio(), 0.0);
  Add(Pass(all[0], all[2], T(0)));  // b00-b01
  Add(Pass(all[1], all[3], T(0)));  // b00-b01 again
  Add(Pass(all[4], all[5], T(0)));  // intra b02
  c = ComputeCoverage(all, h_, T(10), kWindow);
  EXPECT_EQ(c.nodes_passed, 6u);
  EXPECT_EQ(c.block_pairs_passed, 1u);
  EXPECT_DOUBLE_EQ(c.block_pair_ratio(), 1.0 / 3);
  c = ComputeCoverage(all, h_, T(1) + kWindow, kWindow);  // outside the window
  EXPECT_EQ(c.nodes_passed, 0u);
  EXPECT_EQ(c.block_pairs_passed, 0u);
  c = ComputeCoverage(Grid(1, 2), h_, T(0), kWindow);
  EXPECT_EQ(c.block_pairs_total, 0u);
  EXPECT_EQ(c.block_pair_ratio(), 1.0);
}

}  // namespace
}  // namespace tocsin::canary
