#include "canary/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "canary/attribution.h"
#include "canary/testing.h"

namespace tocsin::canary {
namespace {

using namespace testing;  // NOLINT

PlanOptions Options(size_t max_nodes, uint64_t seed = 1, TimePoint now = T(1000)) {
  return {max_nodes, seed, now, kWindow};
}

std::map<std::string, std::string> Blocks(const std::vector<NodeInfo>& nodes) {
  std::map<std::string, std::string> m;
  for (const NodeInfo& n : nodes) m[n.name] = n.block;
  return m;
}

std::vector<std::string> Whys(const std::vector<PlannedPair>& plan) {
  std::vector<std::string> w;
  for (const PlannedPair& p : plan) w.push_back(p.why);
  return w;
}

// The invariants of every plan.
void ExpectValid(const std::vector<PlannedPair>& plan, const std::vector<NodeInfo>& eligible,
                 size_t max_nodes) {
  std::set<std::string> ok, seen;
  for (const NodeInfo& n : eligible) ok.insert(n.name);
  for (const PlannedPair& p : plan) {
    EXPECT_LT(p.a, p.b) << "ordered, never a node with itself";
    EXPECT_TRUE(ok.contains(p.a)) << p.a << " is not eligible";
    EXPECT_TRUE(ok.contains(p.b)) << p.b << " is not eligible";
    EXPECT_TRUE(seen.insert(p.a).second) << p.a << " twice";
    EXPECT_TRUE(seen.insert(p.b).second) << p.b << " twice";
  }
  EXPECT_LE(seen.size(), max_nodes / 2 * 2);
}

// A history where some nodes passed, some block pairs passed, one pair failed and one node is
// blamed: every rule has something to do.
History Mixed(const std::vector<NodeInfo>& all) {
  History h;
  for (size_t i = 0; i + 1 < all.size(); i += 3) {
    EXPECT_TRUE(Record(h, Pass(all[i], all[i + 1], T(static_cast<int64_t>(i))), kWindow).ok());
  }
  EXPECT_TRUE(Record(h, Fail(all[1], all[all.size() - 1], T(900)), kWindow).ok());
  EXPECT_TRUE(
      Record(h,
             Result(all[4], all[5], Outcome::kNodeFault, T(900), "canary.rank-failed", all[4].name),
             kWindow)
          .ok());
  return h;
}

TEST(PlannerTest, PlansAreDisjointEligibleAndWithinBudget) {
  std::vector<NodeInfo> all = Grid(8, 8);
  History h = Mixed(all);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<NodeInfo> eligible;
    for (size_t i = 0; i < all.size(); ++i) {
      if ((i * 7 + seed) % 5 != 0) eligible.push_back(all[i]);
    }
    eligible.push_back(eligible.front());  // a duplicate counts once
    for (size_t max_nodes : {0u, 1u, 2u, 13u, 40u, 1000u}) {
      auto plan = Plan(eligible, all, h, Options(max_nodes, seed));
      ExpectValid(plan, eligible, max_nodes);
      if (max_nodes >= 1000) {
        EXPECT_GE(plan.size(), 20u) << "uses what it may";
      }
    }
  }
}

TEST(PlannerTest, MaxNodesRoundsDownToEven) {
  std::vector<NodeInfo> all = Grid(2, 4);
  EXPECT_EQ(Plan(all, all, {}, Options(7)).size(), 3u);
  EXPECT_EQ(Plan(all, all, {}, Options(8)).size(), 4u);
  EXPECT_EQ(Plan(all, all, {}, Options(1)).size(), 0u);
}

TEST(PlannerTest, DeterministicPerSeed) {
  std::vector<NodeInfo> all = Grid(8, 8);
  History h = Mixed(all);
  auto key = [](const std::vector<PlannedPair>& plan) {
    std::vector<std::string> k;
    for (const PlannedPair& p : plan) k.push_back(p.a + "/" + p.b + "/" + p.why);
    return k;
  };
  auto first = key(Plan(all, all, h, Options(64, 42)));
  EXPECT_EQ(first, key(Plan(all, all, h, Options(64, 42))));
  bool differs = false;
  for (uint64_t seed = 0; seed < 10 && !differs; ++seed) {
    differs = key(Plan(all, all, h, Options(64, seed))) != first;
  }
  EXPECT_TRUE(differs) << "the seed breaks ties";
}

TEST(PlannerTest, PriorityOrder) {
  std::vector<NodeInfo> all = Grid(4, 4);
  History h;
  // Everyone passes within its block at t=0; b00-b01 passes too.
  for (size_t b = 0; b < 4; ++b) {
    ASSERT_TRUE(Record(h, Pass(all[4 * b], all[4 * b + 1], T(0)), kWindow).ok());
    ASSERT_TRUE(Record(h, Pass(all[4 * b + 2], all[4 * b + 3], T(0)), kWindow).ok());
  }
  ASSERT_TRUE(Record(h, Pass(all[0], all[4], T(0)), kWindow).ok());
  // n-03-03 blamed, n-00-00/n-01-00 suspects.
  ASSERT_TRUE(Record(h,
                     Result(all[14], all[15], Outcome::kNodeFault, T(500), "canary.rank-failed",
                            all[15].name),
                     kWindow)
                  .ok());
  ASSERT_TRUE(Record(h, Fail(all[0], all[4], T(600)), kWindow).ok());
  // n-02-00 and n-02-01 join later: they never passed.
  std::vector<NodeInfo> more = all;
  more.push_back({"n-02-98", "b02"});
  more.push_back({"n-02-99", "b02"});
  auto plan = Plan(more, more, h, Options(100, 3, T(1000)));
  ExpectValid(plan, more, 100);
  std::vector<std::string> whys = Whys(plan);
  EXPECT_TRUE(std::is_sorted(whys.begin(), whys.end(), [](const auto& x, const auto& y) {
    auto rank = [](const std::string& w) {
      return w == "retest" ? 0 : w == "node" ? 1 : w == "block-pair" ? 2 : 3;
    };
    return rank(x) < rank(y);
  }));
  ASSERT_GE(plan.size(), 3u);
  auto has = [&](size_t i, const std::string& n) { return plan[i].a == n || plan[i].b == n; };
  EXPECT_TRUE(has(0, "n-00-00") || has(0, "n-01-00")) << "suspects first";
  EXPECT_TRUE(has(1, "n-00-00") || has(1, "n-01-00"));
  EXPECT_TRUE(has(2, "n-03-03")) << "then the blamed node";
  EXPECT_EQ(plan[2].why, "retest");
  EXPECT_EQ(plan[3].why, "node") << "then the nodes that never passed";
  EXPECT_TRUE(has(3, "n-02-98") || has(3, "n-02-99"));
  // Block pairs: b00-b01 passed; of the five others, rule 2 plans two and rule 3 what nodes allow.
  size_t block_pairs = static_cast<size_t>(std::count(whys.begin(), whys.end(), "block-pair"));
  EXPECT_GE(block_pairs, 2u);
  // With budget for one pair, only the oldest suspect's re-test.
  auto one = Plan(more, more, h, Options(2, 3, T(1000)));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].why, "retest");
}

TEST(PlannerTest, RetestPairsASuspectWithAGoodPartnerOfItsOwnBlock) {
  std::vector<NodeInfo> all = Grid(3, 4);
  auto block = Blocks(all);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    History h;
    for (size_t i = 0; i < all.size(); i += 2) {
      ASSERT_TRUE(Record(h, Pass(all[i], all[i + 1], T(0)), kWindow).ok());
    }
    ASSERT_TRUE(Record(h, Fail(all[0], all[4], T(100)), kWindow).ok());  // n-00-00 / n-01-00
    auto plan = Plan(all, all, h, Options(100, seed));
    ASSERT_GE(plan.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(plan[i].why, "retest");
      EXPECT_EQ(block[plan[i].a], block[plan[i].b]) << plan[i].a << " " << plan[i].b;
      EXPECT_NE(plan[i].a + plan[i].b, "n-00-00n-01-00");
    }
  }
}

TEST(PlannerTest, RetestFallsBackToAGoodPartnerElsewhereThenToAnyCleanNode) {
  // b00 has only the suspect; b01's partner passed; b02's node never passed.
  std::vector<NodeInfo> all = {
      {"a", "b00"}, {"b", "b01"}, {"c", "b01"}, {"d", "b02"}, {"e", "b02"}};
  History h;
  ASSERT_TRUE(Record(h, Pass(all[1], all[2], T(0)), kWindow).ok());
  ASSERT_TRUE(Record(h, Fail(all[0], all[3], T(100)), kWindow).ok());  // a / d
  auto plan = Plan(all, all, h, Options(100));
  ASSERT_GE(plan.size(), 2u);
  std::set<std::string> first = {plan[0].a, plan[0].b}, second = {plan[1].a, plan[1].b};
  std::set<std::string> good = {"b", "c"};
  // One suspect takes a good partner (b or c), the other the other good one.
  for (const auto& s : {first, second}) {
    EXPECT_TRUE(std::any_of(s.begin(), s.end(), [&](const auto& n) { return good.contains(n); }));
  }
  // Only e is clean but not good: with b and c taken... a third suspect would get e.
  History h2 = h;
  ASSERT_TRUE(Record(h2, Fail(all[1], all[2], T(200)), kWindow).ok());  // b / c now suspects
  plan = Plan(all, all, h2, Options(100));
  bool e_retest = std::any_of(plan.begin(), plan.end(), [](const PlannedPair& p) {
    return p.why == "retest" && (p.a == "e" || p.b == "e");
  });
  EXPECT_TRUE(e_retest);
}

TEST(PlannerTest, UnpassedNodesFirstOldestFirstAcrossUncoveredBlockPairs) {
  std::vector<NodeInfo> all = Grid(2, 4);
  History h;
  ASSERT_TRUE(Record(h, Pass(all[0], all[1], T(-4000)), kWindow).ok());  // old
  ASSERT_TRUE(Record(h, Pass(all[2], all[3], T(-3700)), kWindow).ok());  // less old
  ASSERT_TRUE(Record(h, Pass(all[6], all[7], T(900)), kWindow).ok());    // recent
  // n-01-00 and n-01-01 never passed: they come first, each with a b00 node (b00-b01 uncovered).
  auto plan = Plan(all, all, h, Options(4, 5));
  ASSERT_EQ(plan.size(), 2u);
  auto block = Blocks(all);
  for (const PlannedPair& p : plan) {
    EXPECT_EQ(p.why, "node");
    EXPECT_NE(block[p.a], block[p.b]);
  }
  std::set<std::string> planned = {plan[0].a, plan[0].b, plan[1].a, plan[1].b};
  EXPECT_TRUE(planned.contains("n-01-00"));
  EXPECT_TRUE(planned.contains("n-01-01"));
  // b00-b01 is planned once; then the b00 nodes pair with each other (oldest first).
  EXPECT_EQ(plan[1].why, "node");
}

TEST(PlannerTest, UnpassedNodesNeverPassedThenOldestPassFirst) {
  std::vector<NodeInfo> all = {{"a", "b00"}, {"b", "b00"}, {"c", "b00"},
                               {"d", "b00"}, {"e", "b00"}, {"f", "b00"}};
  History h;
  ASSERT_TRUE(Record(h, Pass(all[0], all[5], T(-9000)), kWindow).ok());  // a, f: oldest
  ASSERT_TRUE(Record(h, Pass(all[1], all[2], T(-8000)), kWindow).ok());  // b, c
  ASSERT_TRUE(Record(h, Pass(all[4], all[2], T(-7000)), kWindow).ok());  // e, c: least old
  for (uint64_t seed = 0; seed < 5; ++seed) {
    auto plan = Plan(all, all, h, Options(4, seed));
    ASSERT_EQ(plan.size(), 2u);
    // d never passed: first, with the next in line (a or f); then the other of a and f with b.
    std::set<std::string> first = {plan[0].a, plan[0].b}, second = {plan[1].a, plan[1].b};
    EXPECT_TRUE(first.contains("d"));
    EXPECT_TRUE(first.contains("a") || first.contains("f"));
    EXPECT_TRUE(second.contains("a") || second.contains("f"));
    EXPECT_TRUE(second.contains("b"));
  }
}

TEST(PlannerTest, SmallClusters) {
  std::vector<NodeInfo> three = {{"a", "b00"}, {"b", "b00"}, {"c", "b00"}};
  auto plan = Plan(three, three, {}, Options(10));
  ASSERT_EQ(plan.size(), 1u);
  ExpectValid(plan, three, 10);

  std::vector<NodeInfo> four = Grid(1, 4);
  History h;
  for (const PlannedPair& p : Plan(four, four, h, Options(10))) {
    EXPECT_EQ(p.why, "node");
    ASSERT_TRUE(Record(h, Pass({p.a, "b00"}, {p.b, "b00"}, T(1000)), kWindow).ok());
  }
  EXPECT_EQ(ComputeCoverage(four, h, T(1000), kWindow).nodes_passed, 4u);
  plan = Plan(four, four, h, Options(10, 1, T(1001)));
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].why, "intra-block");

  // Unknown blocks: all "" nodes are one block.
  std::vector<NodeInfo> unknown = {{"a", ""}, {"b", ""}, {"c", ""}, {"d", ""}, {"e", "b00"}};
  plan = Plan(unknown, unknown, {}, Options(10));
  ExpectValid(plan, unknown, 10);
  EXPECT_EQ(plan.size(), 2u);
  EXPECT_TRUE(std::any_of(plan.begin(), plan.end(), [](const PlannedPair& p) {
    return p.b == "e" || p.a == "e";
  })) << "the only other block is paired with first";

  EXPECT_TRUE(Plan({}, {}, {}, Options(10)).empty());
  EXPECT_TRUE(Plan({{"a", ""}}, {{"a", ""}}, {}, Options(10)).empty());
}

}  // namespace
}  // namespace tocsin::canary
