#include "controller/cache.h"

#include <gtest/gtest.h>

namespace tocsin::controller {
namespace {

k8s::Snapshot Pods(std::initializer_list<const char*> names) {
  k8s::Snapshot s;
  for (const char* n : names) {
    k8s::Pod p;
    p.ns = "ns";
    p.name = n;
    p.uid = std::string("uid-") + n;
    s.pods.push_back(p);
  }
  return s;
}

TEST(ObjectCacheTest, ListThenWatchEventsKeepTheIndexRight) {
  ObjectCache cache;
  cache.Replace("Pod", Pods({"a", "b", "c"}));
  EXPECT_EQ(cache.Count("Pod"), 3u);
  cache.Apply("Pod", k8s::WatchEvent::Type::kDeleted, Pods({"a"}));  // "c" moves into a's place
  EXPECT_EQ(cache.Count("Pod"), 2u);
  EXPECT_EQ(cache.Uid("Pod", "ns", "c"), "uid-c");
  EXPECT_EQ(cache.Uid("Pod", "ns", "a"), "");
  auto changed = Pods({"c"});
  changed.pods[0].node_name = "n2";
  cache.Apply("Pod", k8s::WatchEvent::Type::kModified, std::move(changed));
  EXPECT_EQ(cache.Count("Pod"), 2u);
  std::string node = cache.Read([](const k8s::Snapshot& s) {
    for (const auto& p : s.pods) {
      if (p.name == "c") return p.node_name;
    }
    return std::string();
  });
  EXPECT_EQ(node, "n2");
  cache.Apply("Pod", k8s::WatchEvent::Type::kAdded, Pods({"d"}));
  cache.Apply("Pod", k8s::WatchEvent::Type::kDeleted, Pods({"zz"}));  // unknown: nothing
  EXPECT_EQ(cache.Count("Pod"), 3u);
  cache.Replace("Pod", Pods({"x"}));  // a relist drops what is gone
  EXPECT_EQ(cache.Count("Pod"), 1u);
  EXPECT_EQ(cache.Uid("Pod", "ns", "d"), "");
  EXPECT_EQ(cache.Uid("Pod", "ns", "x"), "uid-x");
}

TEST(ObjectCacheTest, JobKindsShareAVectorButNotTheirLists) {
  ObjectCache cache;
  k8s::Snapshot jobs, pytorch;
  jobs.jobs = {{"Job", "t", "j1", "u1"}, {"Job", "t", "j2", "u2"}};
  pytorch.jobs = {{"PyTorchJob", "t", "p1", "u3"}};
  cache.Replace("Job", std::move(jobs));
  cache.Replace("PyTorchJob", std::move(pytorch));
  k8s::Snapshot again;
  again.jobs = {{"Job", "t", "j2", "u2"}};
  cache.Replace("Job", std::move(again));
  EXPECT_EQ(cache.Count("Job"), 1u);
  EXPECT_EQ(cache.Count("PyTorchJob"), 1u);
  EXPECT_EQ(cache.Uid("PyTorchJob", "t", "p1"), "u3");
  EXPECT_EQ(cache.Uid("Job", "t", "j2"), "u2");
  k8s::Snapshot gone;
  gone.jobs = {{"PyTorchJob", "t", "p1", ""}};
  cache.Apply("PyTorchJob", k8s::WatchEvent::Type::kDeleted, std::move(gone));
  EXPECT_EQ(cache.Count("PyTorchJob"), 0u);
  EXPECT_EQ(cache.Uid("Job", "t", "j2"), "u2");
}

TEST(ObjectCacheTest, NodesAndDaemonSets) {
  ObjectCache cache;
  k8s::Snapshot s;
  s.nodes.push_back({});
  s.nodes[0].name = "n1";
  s.nodes[0].uid = "nu";
  cache.Replace("Node", std::move(s));
  EXPECT_EQ(cache.Uid("Node", "", "n1"), "nu");
  k8s::Snapshot d;
  d.daemonsets.push_back({});
  d.daemonsets[0].ns = "kube-system";
  d.daemonsets[0].name = "rdma";
  d.daemonsets[0].uid = "du";
  cache.Apply("DaemonSet", k8s::WatchEvent::Type::kAdded, std::move(d));
  EXPECT_EQ(cache.Uid("DaemonSet", "kube-system", "rdma"), "du");
  EXPECT_EQ(cache.Count("Node"), 1u);
}

}  // namespace
}  // namespace tocsin::controller
