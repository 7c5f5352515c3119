#include "controller/cache.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

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

k8s::Snapshot JobWithTemplate(const char* kind, const char* name, const char* hca) {
  k8s::Snapshot s;
  s.jobs = {{kind, "t", name, std::string("u-") + name}};
  k8s::Workload w{kind, "t", name};
  w.containers.push_back({});
  w.containers[0].env["NCCL_IB_HCA"] = hca;
  s.workloads.push_back(w);
  return s;
}

std::map<std::string, std::string> Templates(const ObjectCache& cache) {
  return cache.Read([](const k8s::Snapshot& s) {
    std::map<std::string, std::string> out;
    for (const auto& w : s.workloads) out[w.kind + "/" + w.name] = w.containers[0].env.at("NCCL_IB_HCA");
    return out;
  });
}

TEST(ObjectCacheTest, TemplatesOnlyWhenKeptAndIndexedApartFromTheirJobs) {
  ObjectCache off;
  off.Replace("Job", JobWithTemplate("Job", "j1", "mlx5_0"));
  EXPECT_TRUE(Templates(off).empty());  // the audit alone never pays for them
  EXPECT_EQ(off.Count("Job"), 1u);

  ObjectCache cache;
  cache.KeepTemplates(true);
  cache.Replace("Job", JobWithTemplate("Job", "j1", "mlx5_0"));
  cache.Apply("Job", k8s::WatchEvent::Type::kAdded, JobWithTemplate("Job", "j2", "mlx5_1"));
  cache.Apply("PyTorchJob", k8s::WatchEvent::Type::kAdded,
              JobWithTemplate("PyTorchJob", "p1", "mlx5_2"));
  EXPECT_EQ(Templates(cache), (std::map<std::string, std::string>{
                                  {"Job/j1", "mlx5_0"}, {"Job/j2", "mlx5_1"},
                                  {"PyTorchJob/p1", "mlx5_2"}}));
  cache.Apply("Job", k8s::WatchEvent::Type::kModified, JobWithTemplate("Job", "j1", "mlx5_9"));
  cache.Apply("Job", k8s::WatchEvent::Type::kDeleted, JobWithTemplate("Job", "j2", ""));
  EXPECT_EQ(Templates(cache), (std::map<std::string, std::string>{
                                  {"Job/j1", "mlx5_9"}, {"PyTorchJob/p1", "mlx5_2"}}));
  EXPECT_EQ(cache.Count("Job"), 1u);
  EXPECT_EQ(cache.Uid("Job", "t", "j1"), "u-j1");
  // A relist of one kind keeps the other kind's templates, and indexes them again.
  cache.Replace("Job", JobWithTemplate("Job", "j3", "mlx5_3"));
  cache.Apply("PyTorchJob", k8s::WatchEvent::Type::kModified,
              JobWithTemplate("PyTorchJob", "p1", "mlx5_4"));
  EXPECT_EQ(Templates(cache), (std::map<std::string, std::string>{
                                  {"Job/j3", "mlx5_3"}, {"PyTorchJob/p1", "mlx5_4"}}));
  EXPECT_EQ(cache.Uid("PyTorchJob", "t", "p1"), "u-p1");
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
