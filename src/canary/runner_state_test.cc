#include "canary/runner_state.h"

#include <gtest/gtest.h>

namespace tocsin::canary {
namespace {

TEST(RunnerState, RoundTrips) {
  RunnerState st;
  TimePoint t = TimePoint(std::chrono::seconds(1'800'000'000));
  st.last_round_start = t;
  st.faults["canary.admission"] = {t, "no pod"};
  st.details["canary.unschedulable|n0"] = {{"message", "0/4 nodes"}, {"at", "2027-01-15T08:00:00Z"},
                                           {"evidence", {{"nodes", 4}}}};
  st.first_seen["n0"] = t;
  auto back = DecodeRunnerState(EncodeRunnerState(st));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->last_round_start, t);
  EXPECT_EQ(back->faults.at("canary.admission").second, "no pod");
  EXPECT_EQ(back->details.at("canary.unschedulable|n0")["evidence"]["nodes"], 4);
  EXPECT_EQ(back->first_seen.at("n0"), t);
}

TEST(RunnerState, KeepsTheNewestDetailsOnly) {
  RunnerState st;
  for (int i = 0; i < 300; ++i) {
    st.details["k" + std::to_string(i)] = {{"message", "m"},
                                           {"at", "2027-01-15T08:" + std::to_string(10 + i / 60) +
                                                      ":" + std::to_string(10 + i % 60) + "Z"}};
  }
  auto back = DecodeRunnerState(EncodeRunnerState(st));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->details.size(), kMaxDetails);
  EXPECT_TRUE(back->details.count("k299"));
  EXPECT_FALSE(back->details.count("k0"));
}

TEST(RunnerState, HostileInputIsBoundedNeverDeep) {
  // 200,000 levels of nesting in the evidence: parsed without building them, never dumped deep.
  std::string deep = R"({"details":{"k":{"message":"m","evidence":{"a":)";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}}}}";
  auto st = DecodeRunnerState(deep);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->details.at("k")["evidence"].dump().size() < 100u, true);
  EXPECT_FALSE(DecodeRunnerState("[1]").ok());
  EXPECT_FALSE(DecodeRunnerState("not json").ok());
  EXPECT_FALSE(DecodeRunnerState(std::string(kMaxRunnerStateBytes + 1, ' ')).ok());
  auto junk = DecodeRunnerState(
      R"({"faults":{"rm -rf":{"since":"2027-01-15T08:00:00Z"},"canary.x":{"since":5}},)"
      R"("fabric":{"Not A Node":"2027-01-15T08:00:00Z","n1":"yesterday"},"details":[]})");
  ASSERT_TRUE(junk.ok());
  EXPECT_TRUE(junk->faults.empty());
  EXPECT_TRUE(junk->first_seen.empty());
  EXPECT_TRUE(junk->details.empty());
}

}  // namespace
}  // namespace tocsin::canary
