#include "controller/tracker.h"

#include <gtest/gtest.h>

namespace tocsin::controller {
namespace {

Finding F(const std::string& check, const std::string& subject, std::optional<TimePoint> since) {
  Finding f;
  f.check = check;
  f.subject = subject;
  f.severity = Severity::kError;
  f.message = check + " on " + subject;
  f.since = since;
  return f;
}

const TimePoint kT0 = FromUnixSeconds(1'780'000'000);

TEST(FindingTrackerTest, OnsetFromTheObjectsElseFirstSeenAndKept) {
  FindingTracker t;
  std::vector<Finding> now = {F("daemonset.not-ready", "kube-system/rdma", kT0),
                              F("node.rdma.unadvertised", "n1", std::nullopt)};
  auto tr = t.Update(now, kT0 + std::chrono::hours(1));
  ASSERT_EQ(tr.size(), 2u);
  EXPECT_TRUE(tr[0].appeared && tr[1].appeared);
  EXPECT_EQ(*now[0].since, kT0);
  EXPECT_EQ(*now[1].since, kT0 + std::chrono::hours(1));  // first seen
  std::vector<Finding> later = {F("daemonset.not-ready", "kube-system/rdma", kT0),
                                F("node.rdma.unadvertised", "n1", std::nullopt)};
  EXPECT_TRUE(t.Update(later, kT0 + std::chrono::hours(2)).empty());
  EXPECT_EQ(*later[1].since, kT0 + std::chrono::hours(1));  // not "now"
}

TEST(FindingTrackerTest, AnOnsetNeverMovesLaterWhileTheFindingLasts) {
  FindingTracker t;
  std::vector<Finding> now = {F("daemonset.not-ready", "kube-system/rdma", kT0)};
  t.Update(now, kT0 + std::chrono::hours(1));
  // The crash-looping pod was re-created: the objects now show a later onset.
  std::vector<Finding> later = {F("daemonset.not-ready", "kube-system/rdma",
                                  kT0 + std::chrono::minutes(50))};
  t.Update(later, kT0 + std::chrono::hours(2));
  EXPECT_EQ(*later[0].since, kT0);
}

TEST(FindingTrackerTest, AFlapIsNoTransitionAndAClearWaitsForClearAfter) {
  FindingTracker t;
  const auto hold = std::chrono::seconds(30);
  std::vector<Finding> on = {F("daemonset.not-ready", "kube-system/rdma", kT0)};
  EXPECT_EQ(t.Update(on, kT0, hold).size(), 1u);
  std::vector<Finding> off;
  EXPECT_TRUE(t.Update(off, kT0 + std::chrono::seconds(1), hold).empty());  // ready an instant
  EXPECT_EQ(*t.NextClear(hold), kT0 + std::chrono::seconds(31));
  std::vector<Finding> again = {F("daemonset.not-ready", "kube-system/rdma",
                                  kT0 + std::chrono::seconds(2))};
  EXPECT_TRUE(t.Update(again, kT0 + std::chrono::seconds(2), hold).empty());  // no new Warning
  EXPECT_EQ(*again[0].since, kT0);
  EXPECT_FALSE(t.NextClear(hold).has_value());
  EXPECT_TRUE(t.Update(off, kT0 + std::chrono::seconds(10), hold).empty());
  auto cleared = t.Update(off, kT0 + std::chrono::seconds(40), hold);
  ASSERT_EQ(cleared.size(), 1u);
  EXPECT_FALSE(cleared[0].appeared);
  EXPECT_EQ(t.size(), 0u);
}

TEST(FindingTrackerTest, ClearedIsReportedOnceWithTheLastMessage) {
  FindingTracker t;
  std::vector<Finding> now = {F("pod.crashloop", "ns/p", kT0)};
  t.Update(now, kT0);
  std::vector<Finding> none;
  auto tr = t.Update(none, kT0 + std::chrono::minutes(1));
  ASSERT_EQ(tr.size(), 1u);
  EXPECT_FALSE(tr[0].appeared);
  EXPECT_EQ(tr[0].finding.message, "pod.crashloop on ns/p");
  EXPECT_TRUE(t.Update(none, kT0 + std::chrono::minutes(2)).empty());
}

TEST(FindingTrackerTest, ARestartRestoresOnsetsAndAnnouncesNothingTwice) {
  FindingTracker first;
  std::vector<Finding> now = {F("node.rdma.unadvertised", "n1", std::nullopt),
                              F("pod.crashloop", "ns/p", kT0)};
  first.Update(now, kT0 + std::chrono::hours(5));
  size_t dropped = 7;
  std::string saved = first.Serialize(64 << 10, &dropped);
  EXPECT_EQ(dropped, 0u);

  FindingTracker second;  // the next leader
  ASSERT_TRUE(second.Restore(saved).ok());
  std::vector<Finding> again = {F("node.rdma.unadvertised", "n1", std::nullopt)};
  auto tr = second.Update(again, kT0 + std::chrono::hours(9));
  EXPECT_EQ(*again[0].since, kT0 + std::chrono::hours(5));
  ASSERT_EQ(tr.size(), 1u);  // only the crash loop, which cleared while nobody led
  EXPECT_FALSE(tr[0].appeared);
  EXPECT_EQ(tr[0].finding.check, "pod.crashloop");
}

TEST(FindingTrackerTest, SerializeKeepsTheOldestWhenFullAndRestoreRefusesJunk) {
  FindingTracker t;
  std::vector<Finding> many;
  for (int i = 0; i < 100; ++i) {
    many.push_back(F("node.not-ready", "node-" + std::to_string(i), kT0 + std::chrono::seconds(i)));
  }
  t.Update(many, kT0 + std::chrono::hours(1));
  size_t dropped = 0;
  std::string s = t.Serialize(2000, &dropped);
  EXPECT_LE(s.size(), 2000u);
  EXPECT_GT(dropped, 0u);
  EXPECT_NE(s.find("\"node-0\""), std::string::npos);
  EXPECT_EQ(s.find("\"node-99\""), std::string::npos);
  FindingTracker u;
  for (const char* junk : {"", "[]", "{\"version\":2,\"findings\":[]}",
                           "{\"version\":1,\"findings\":[{\"check\":1}]}",
                           "{\"version\":1,\"findings\":[{\"check\":\"c\",\"subject\":\"s\","
                           "\"since\":\"yesterday\"}]}"}) {
    EXPECT_FALSE(u.Restore(junk).ok()) << junk;
  }
  EXPECT_FALSE(u.restored());
}

}  // namespace
}  // namespace tocsin::controller
