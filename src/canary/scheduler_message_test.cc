#include "canary/scheduler_message.h"

#include <gtest/gtest.h>

namespace tocsin::canary {
namespace {

TEST(SchedulerMessage, ReadsTheCountsOfKubernetes120) {
  auto m = ParseSchedulerMessage(
      "0/4 nodes are available: 2 Insufficient rdma/hca_shared_devices_a, 2 node(s) didn't match "
      "node selector.");
  ASSERT_TRUE(m.parsed);
  EXPECT_EQ(m.available, 0);
  EXPECT_EQ(m.total, 4);
  ASSERT_EQ(m.causes.size(), 2u);
  EXPECT_EQ(m.causes[0].first, "Insufficient rdma/hca_shared_devices_a");
  EXPECT_EQ(m.causes[0].second, 2);
  EXPECT_EQ(m.causes[1].first, "node(s) didn't match node selector");
  EXPECT_EQ(m.causes[1].second, 2);
}

TEST(SchedulerMessage, StopsBeforeThePreemptionPartOfNewerSchedulers) {
  auto m = ParseSchedulerMessage(
      "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}, 2 Insufficient "
      "nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for "
      "incoming pod..");
  ASSERT_TRUE(m.parsed);
  EXPECT_EQ(m.total, 3);
  ASSERT_EQ(m.causes.size(), 2u);
  EXPECT_EQ(m.causes[1].first, "Insufficient nvidia.com/gpu");
}

TEST(SchedulerMessage, AnythingElseIsNotParsed) {
  for (const char* text :
       {"", "no nodes", "x/4 nodes are available: 1 a.", "5/4 nodes are available: 1 a.",
        "0/4 nodes are available: two Insufficient cpu.", "0/4 nodes are available: 3 .",
        "-1/4 nodes are available: 1 a."}) {
    EXPECT_FALSE(ParseSchedulerMessage(text).parsed) << text;
  }
}

TEST(SchedulerMessage, CapsWhatAPodCouldWrite) {
  std::string text = "0/100 nodes are available: ";
  for (int i = 0; i < 100; ++i) text += "1 cause" + std::to_string(i) + std::string(400, 'x') + ", ";
  text += "1 \x1b[31mred.";
  auto m = ParseSchedulerMessage(text);
  ASSERT_TRUE(m.parsed);
  EXPECT_EQ(m.causes.size(), kMaxSchedulerCauses);
  for (const auto& [cause, n] : m.causes) EXPECT_LE(cause.size(), kMaxSchedulerCause);
  auto esc = ParseSchedulerMessage("0/1 nodes are available: 1 \x1b[31mred.");
  ASSERT_TRUE(esc.parsed);
  EXPECT_EQ(esc.causes[0].first.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace tocsin::canary
