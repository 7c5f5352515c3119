#include "controller/event_poster.h"

#include <gtest/gtest.h>

namespace tocsin::controller {
namespace {

Transition T(const std::string& check, const std::string& subject, bool appeared = true) {
  Transition t;
  t.appeared = appeared;
  t.finding.check = check;
  t.finding.subject = subject;
  t.finding.severity = Severity::kCritical;
  t.finding.message = "m";
  t.finding.since = FromUnixSeconds(1'780'000'000);
  return t;
}

void Fill(ObjectCache& cache) {
  k8s::Snapshot s;
  s.nodes.push_back({});
  s.nodes[0].name = "gpu-1";
  s.nodes[0].uid = "nu";
  cache.Replace("Node", std::move(s));
  k8s::Snapshot d;
  d.daemonsets.push_back({});
  d.daemonsets[0].ns = "kube-system";
  d.daemonsets[0].name = "rdma";
  d.daemonsets[0].uid = "du";
  cache.Replace("DaemonSet", std::move(d));
  k8s::Snapshot j;
  j.jobs = {{"MPIJob", "team", "bert", "ju"}, {"Job", "team", "plain", "pu"}};
  cache.Replace("MPIJob", std::move(j));
  k8s::Snapshot j2;
  j2.jobs = {{"Job", "team", "plain", "pu"}};
  cache.Replace("Job", std::move(j2));
}

TEST(EventForTest, EachSubjectGoesToItsObject) {
  ObjectCache cache;
  Fill(cache);
  auto ds = EventFor(T("daemonset.not-ready", "kube-system/rdma"), cache, "default", "me");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->kind, "DaemonSet");
  EXPECT_EQ(ds->uid, "du");
  EXPECT_EQ(ds->ns, "kube-system");
  EXPECT_EQ(ds->type, "Warning");
  EXPECT_NE(ds->message.find("since 2026-"), std::string::npos) << ds->message;
  auto node = EventFor(T("daemonset.coverage", "gpu-1", false), cache, "default", "me");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->kind, "Node");
  EXPECT_EQ(node->ns, "default");
  EXPECT_EQ(node->reason, "TocsinFindingCleared");
  auto mpi = EventFor(T("job.rdma.not-requested", "kubeflow/team/bert"), cache, "default", "me");
  ASSERT_TRUE(mpi);
  EXPECT_EQ(mpi->kind, "MPIJob");
  EXPECT_EQ(mpi->uid, "ju");
  auto job = EventFor(T("job.placement.spread", "job/team/plain"), cache, "default", "me");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->kind, "Job");
}

TEST(EventForTest, NoObjectNoEvent) {
  ObjectCache cache;
  Fill(cache);
  // No object to carry it, an object the cache never saw (a name from a saved state, say),
  // a subject that does not parse.
  for (const auto& [check, subject] : std::vector<std::pair<std::string, std::string>>{
           {"daemonset.coverage", "cluster"},
           {"audit.input.incomplete", "pods"},
           {"daemonset.not-ready", "kube-system/victim"},
           {"pod.crashloop", "ns/a/b"},
           {"node.not-ready", "gpu-9"},
           {"job.rdma.not-requested", "kubeflow/team/unknown"},
           {"job.rdma.not-requested", "other/team/bert"}}) {
    EXPECT_FALSE(EventFor(T(check, subject), cache, "default", "me")) << check << " " << subject;
  }
}

}  // namespace
}  // namespace tocsin::controller
