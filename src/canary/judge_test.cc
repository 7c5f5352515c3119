#include "canary/judge.h"

#include <gtest/gtest.h>

namespace tocsin::canary {
namespace {

using Kind = Judgement::Kind;
using std::chrono::seconds;

const TimePoint kT0 = TimePoint(seconds(1'800'000'000));

k8s::Pod PodAt(TimePoint created) {
  k8s::Pod p;
  p.ns = "tocsin";
  p.name = "tocsin-canary-r-0-r0-abcde";
  p.phase = "Pending";
  p.created = created;
  return p;
}

RankView View(int rank, const k8s::Pod* pod, std::string node) {
  RankView v;
  v.rank = rank;
  v.planned_node = std::move(node);
  v.job_created = kT0;
  v.pod = pod;
  return v;
}

k8s::Pod Ended(int exit, std::string message, std::string node) {
  k8s::Pod p = PodAt(kT0);
  p.node_name = std::move(node);
  p.phase = exit == 0 ? "Succeeded" : "Failed";
  k8s::ContainerStatus st;
  st.name = kBenchContainer;
  st.exit_code = exit;
  st.finished = kT0 + seconds(20);
  st.termination_message = std::move(message);
  p.statuses.push_back(st);
  return p;
}

std::string VerdictJson(int rank, int exit, const char* transport, const char* rdma,
                        const std::string& findings) {
  return std::string("{\"v\":1,\"rank\":") + std::to_string(rank) +
         ",\"world\":2,\"exit\":" + std::to_string(exit) + ",\"transport\":\"" + transport +
         "\",\"provider\":\"tcp\",\"rdma\":" + rdma +
         ",\"tests\":[{\"test\":\"p2p\",\"busbw\":11.5,\"algbw\":11.5,\"bytes\":65536},"
         "{\"test\":\"allreduce\",\"busbw\":9.25,\"algbw\":4.6,\"bytes\":65536}],"
         "\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"node\":\"n0\"},{\"rank\":1,\"host\":\"h1\","
         "\"node\":\"n1\"}],\"findings\":[" + findings + "],\"trimmed\":0}";
}

TEST(CanaryJudge, PendingPastTheDeadlineCarriesTheSchedulersWords) {
  k8s::Pod pod = PodAt(kT0);
  pod.conditions.push_back({"PodScheduled", "False", "Unschedulable",
                            "0/4 nodes are available: 2 Insufficient rdma/hca_shared_devices_a, 2 "
                            "node(s) didn't match node selector.", kT0});
  JudgeOptions o;
  o.resources = {"rdma/hca_shared_devices_a"};
  RankView v = View(0, &pod, "n0");
  Judgement early = JudgeRank(v, o, kT0 + seconds(60));
  EXPECT_EQ(early.kind, Kind::kWait);
  EXPECT_EQ(early.pending_since, kT0);
  Judgement j = JudgeRank(v, o, kT0 + seconds(121));
  ASSERT_EQ(j.kind, Kind::kNodeFault);
  EXPECT_EQ(j.check, "canary.unschedulable");
  EXPECT_EQ(j.node, "n0");
  EXPECT_NE(j.message.find("Insufficient rdma/hca_shared_devices_a"), std::string::npos);
  EXPECT_EQ(j.evidence["causes"]["Insufficient rdma/hca_shared_devices_a"], 2);
  EXPECT_EQ(j.evidence["nodes"], 4);
}

TEST(CanaryJudge, ANodeThatAdvertisesNoneOfTheResourceIsJudgedAtOnce) {
  k8s::Pod pod = PodAt(kT0);
  pod.conditions.push_back({"PodScheduled", "False", "Unschedulable",
                            "0/4 nodes are available: 4 Insufficient rdma/hca_shared_devices_a.",
                            kT0});
  JudgeOptions o;
  o.resources = {"rdma/hca_shared_devices_a"};
  RankView v = View(0, &pod, "n0");
  k8s::Node node;
  node.name = "n0";
  node.created = kT0 - seconds(3600);
  node.allocatable = {{"cpu", "64"}, {"rdma/hca_shared_devices_a", "0"}};
  v.node = node;
  // Its device plugin serves nothing: no waiting for the deadline.
  Judgement j = JudgeRank(v, o, kT0 + seconds(3));
  ASSERT_EQ(j.kind, Kind::kNodeFault);
  EXPECT_EQ(j.check, "canary.unschedulable");
  EXPECT_EQ(j.node, "n0");
  EXPECT_NE(j.message.find("n0 advertises no rdma/hca_shared_devices_a"), std::string::npos)
      << j.message;
  EXPECT_EQ(j.evidence["node_allocatable"]["rdma/hca_shared_devices_a"], "0");
  // Absent is the same.
  v.node->allocatable.erase("rdma/hca_shared_devices_a");
  EXPECT_EQ(JudgeRank(v, o, kT0 + seconds(3)).evidence["node_allocatable"]
                ["rdma/hca_shared_devices_a"], "absent");
  // Advertised but held by others: the deadline decides.
  v.node->allocatable["rdma/hca_shared_devices_a"] = "1";
  EXPECT_EQ(JudgeRank(v, o, kT0 + seconds(3)).kind, Kind::kWait);
  // A node younger than the deadline may still be registering its device plugin.
  v.node->allocatable["rdma/hca_shared_devices_a"] = "0";
  v.node->created = kT0 - seconds(30);
  EXPECT_EQ(JudgeRank(v, o, kT0 + seconds(3)).kind, Kind::kWait);
  // Refused for something else (a taint): the node advertising nothing is not the scheduler's
  // reason, so the deadline decides.
  v.node->created = kT0 - seconds(3600);
  pod.conditions[0].message = "0/4 nodes are available: 4 node(s) had taint {x: y}, that the "
                              "pod didn't tolerate.";
  EXPECT_EQ(JudgeRank(v, o, kT0 + seconds(3)).kind, Kind::kWait);
}

TEST(CanaryJudge, EachStuckStageIsNamedByItsCause) {
  JudgeOptions o;
  TimePoint late = kT0 + seconds(300);
  // No pod at all: a queue or a quota.
  RankView none = View(0, nullptr, "n0");
  EXPECT_EQ(JudgeRank(none, o, late).check, "canary.admission");
  // Scheduled, the sandbox never came up.
  k8s::Pod sandbox = PodAt(kT0);
  sandbox.node_name = "n0";
  k8s::ContainerStatus waiting;
  waiting.name = kBenchContainer;
  waiting.waiting_reason = "ContainerCreating";
  sandbox.statuses.push_back(waiting);
  RankView sb = View(0, &sandbox, "n0");
  sb.sandbox_events = {"networkPlugin cni failed: Multus: cannot find a network-attachment-"
                       "definition (rdma-net)"};
  Judgement s = JudgeRank(sb, o, late);
  EXPECT_EQ(s.check, "canary.sandbox");
  EXPECT_EQ(s.kind, Kind::kCanaryFault);  // the canary's network is missing: not the node's fault
  EXPECT_NE(s.message.find("rdma-net"), std::string::npos);
  sb.sandbox_events = {"failed to set up pod network: plugin type=\"ib-sriov\" failed: no VF "
                       "available on mlx5_0"};
  Judgement vf = JudgeRank(sb, o, late);
  EXPECT_EQ(vf.kind, Kind::kNodeFault);
  EXPECT_EQ(vf.node, "n0");
  // The image.
  k8s::Pod image = sandbox;
  image.statuses[0].waiting_reason = "ImagePullBackOff";
  EXPECT_EQ(JudgeRank(View(0, &image, "n0"), o, late).check, "canary.image");
  // The kubelet refused it.
  k8s::Pod refused = PodAt(kT0);
  refused.node_name = "n0";
  refused.phase = "Failed";
  refused.reason = "UnexpectedAdmissionError";
  refused.message = "Allocate failed due to no healthy devices present";
  Judgement r = JudgeRank(View(0, &refused, "n0"), o, kT0 + seconds(5));
  EXPECT_EQ(r.kind, Kind::kNodeFault);
  EXPECT_EQ(r.check, "canary.node-admission");
  // Placed elsewhere than planned.
  k8s::Pod moved = sandbox;
  moved.node_name = "n9";
  EXPECT_EQ(JudgeRank(View(0, &moved, "n0"), o, kT0).check, "canary.placement");
}

TEST(CanaryJudge, TcpWhileRdmaIsRequiredIsNotRdmaEvenWithBandwidth) {
  JudgeOptions o;  // expect rdma
  k8s::Pod p0 = Ended(0, VerdictJson(0, 0, "tcp", "false", ""), "n0");
  k8s::Pod p1 = Ended(0, VerdictJson(1, 0, "tcp", "false", ""), "n1");
  Judgement j = JudgePair(View(0, &p0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(30));
  ASSERT_EQ(j.kind, Kind::kPairFault);
  EXPECT_EQ(j.check, "canary.transport.not-rdma");
  EXPECT_NE(j.message.find("although it measured"), std::string::npos) << j.message;
  EXPECT_EQ(j.evidence["busbw_gbps"]["p2p"], 11.5);
  // The same run passes where TCP is what is expected.
  o.expect = "tcp";
  EXPECT_EQ(JudgePair(View(0, &p0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(30)).kind,
            Kind::kPass);
  // And a floor it does not reach is canary.busbw.low.
  o.min_busbw = 10;
  Judgement low = JudgePair(View(0, &p0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(30));
  EXPECT_EQ(low.check, "canary.busbw.low");
}

TEST(CanaryJudge, ARefusedRdmaRunAndARankWithoutAVerdict) {
  JudgeOptions o;
  std::string refusal =
      "{\"check\":\"net.transport.not-rdma\",\"severity\":\"error\",\"subject\":\"rank 0\","
      "\"message\":\"the data path is tcp: not RDMA\"}";
  k8s::Pod p0 = Ended(1, VerdictJson(0, 1, "fabric", "false", refusal), "n0");
  k8s::Pod p1 = Ended(1, "", "n1");
  Judgement j = JudgePair(View(0, &p0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(30));
  EXPECT_EQ(j.check, "canary.transport.not-rdma");
  // No verdict at all (the container crashed, or wrote junk).
  k8s::Pod junk0 = Ended(139, "Segmentation fault", "n0");
  Judgement r = JudgePair(View(0, &junk0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(30));
  EXPECT_EQ(r.kind, Kind::kPairFault);
  EXPECT_EQ(r.check, "canary.rank-failed");
  EXPECT_NE(r.message.find("139"), std::string::npos);
}

TEST(CanaryJudge, RankOneThatNeverStartedIsTheCauseNotRankZerosWait) {
  JudgeOptions o;
  o.resources = {"rdma/hca_shared_devices_a"};
  std::string gave_up =
      "{\"check\":\"net.rank.failed\",\"severity\":\"error\",\"subject\":\"rank 1\","
      "\"message\":\"rank 1 did not join within 60s\"}";
  k8s::Pod p0 = Ended(1, VerdictJson(0, 1, "fabric", "null", gave_up), "n0");
  k8s::Pod p1 = PodAt(kT0);
  p1.conditions.push_back({"PodScheduled", "False", "Unschedulable",
                           "0/4 nodes are available: 1 Insufficient rdma/hca_shared_devices_a, 3 "
                           "node(s) didn't match node selector.", kT0});
  RankView v1 = View(1, &p1, "n1");
  Judgement j = JudgePair(View(0, &p0, "n0"), v1, o, kT0 + seconds(61));
  EXPECT_EQ(j.kind, Kind::kNodeFault);
  EXPECT_EQ(j.check, "canary.unschedulable");
  EXPECT_EQ(j.node, "n1");
  // Rank 0 that failed at once (a refusal) while rank 1 was just created blames nobody's stage.
  RankView young = v1;
  young.job_created = kT0 + seconds(58);
  EXPECT_EQ(JudgePair(View(0, &p0, "n0"), young, o, kT0 + seconds(61)).check,
            "canary.rank-failed");
}

TEST(CanaryJudge, OnlyTheFabricsResourceBlamesTheNode) {
  JudgeOptions o;
  o.resources = {"rdma/hca_shared_devices_a"};
  k8s::Pod pod = PodAt(kT0);
  pod.conditions.push_back({"PodScheduled", "False", "Unschedulable",
                            "0/4 nodes are available: 1 node(s) had taint {nvidia.com/gpu: "
                            "present}, that the pod didn't tolerate, 3 node(s) didn't match node "
                            "selector.", kT0});
  Judgement j = JudgeRank(View(0, &pod, "n0"), o, kT0 + seconds(200));
  EXPECT_EQ(j.kind, Kind::kCanaryFault);
  EXPECT_EQ(j.check, "canary.unschedulable");
  EXPECT_NE(j.message.find("tolerations"), std::string::npos);
}

TEST(CanaryJudge, WaitsForRankOneUntilTheGraceEnds) {
  JudgeOptions o;
  o.expect = "tcp";
  k8s::Pod p0 = Ended(0, VerdictJson(0, 0, "tcp", "false", ""), "n0");
  k8s::Pod p1 = PodAt(kT0);
  p1.node_name = "n1";
  p1.phase = "Running";
  EXPECT_EQ(JudgePair(View(0, &p0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(30)).kind,
            Kind::kWait);
  // Rank 0's verdict decides once the grace is over.
  EXPECT_EQ(JudgePair(View(0, &p0, "n0"), View(1, &p1, "n1"), o, kT0 + seconds(200)).kind,
            Kind::kPass);
}

TEST(CanaryJudge, ARankReportingAnotherNodeIsMisplaced) {
  JudgeOptions o;
  o.expect = "tcp";
  k8s::Pod p0 = Ended(0, VerdictJson(0, 0, "tcp", "false", ""), "n0");
  k8s::Pod p1 = Ended(0, VerdictJson(1, 0, "tcp", "false", ""), "n1");
  Judgement j = JudgePair(View(0, &p0, "n0"), View(1, &p1, "n7"), o, kT0 + seconds(30));
  EXPECT_EQ(j.check, "canary.placement");
}

}  // namespace
}  // namespace tocsin::canary
