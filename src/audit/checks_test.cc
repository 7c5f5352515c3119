#include "audit/checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "testing/findings.h"
#include "testing/status_matchers.h"

namespace tocsin::audit {
namespace {

// A cluster built in code: each test states only what its check reads.
const TimePoint kNow = FromUnixSeconds(1764000000);
constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;

TimePoint Ago(int64_t seconds) { return kNow - std::chrono::seconds(seconds); }

k8s::Condition Cond(const std::string& type, const std::string& status, int64_t ago,
                    const std::string& reason = "") {
  return {type, status, reason, "", Ago(ago)};
}

k8s::Node FabricNode(const std::string& name, k8s::StringMap allocatable = {{"rdma/ib", "8"}}) {
  k8s::Node n;
  n.name = name;
  n.labels["feature.node.kubernetes.io/pci-15b3.present"] = "true";
  n.allocatable = std::move(allocatable);
  n.created = Ago(30 * kDay);
  n.conditions = {Cond("Ready", "True", 30 * kDay)};
  return n;
}

k8s::DaemonSet Plugin(int64_t desired, int64_t ready) {
  k8s::DaemonSet ds;
  ds.ns = "kube-system";
  ds.name = "rdma-shared-dp-ds";
  ds.uid = "ds-uid";
  ds.images = {"ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"};
  ds.created = Ago(10 * kDay);
  ds.desired = desired;
  ds.current = desired;
  ds.ready = ready;
  ds.available = ready;
  ds.unavailable = desired - ready;
  return ds;
}

// A pod of `ds` on `node`, created `age` ago; ready, or waiting with `waiting` since then.
k8s::Pod PluginPod(const k8s::DaemonSet& ds, const std::string& node, int64_t age,
                   const std::string& waiting = "") {
  k8s::Pod p;
  p.ns = ds.ns;
  p.name = ds.name + "-" + node;
  p.node_name = node;
  p.created = Ago(age);
  p.owners = {{"DaemonSet", ds.name, ds.uid}};
  k8s::ContainerStatus s;
  s.name = "plugin";
  s.image = ds.images[0];
  s.ready = waiting.empty();
  s.waiting_reason = waiting;
  if (!waiting.empty()) s.restart_count = 40;
  p.statuses = {s};
  // Never ready: the Ready transition is the one at the pod's start.
  p.conditions = {Cond("Ready", waiting.empty() ? "True" : "False", age)};
  return p;
}

Options Opt() {
  Options o;
  o.now = kNow;
  return o;
}

// The findings of `check` in `all`.
constexpr auto Of = &::tocsin::testing::FindingsOf;

bool Has(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

// --- daemonset.not-ready -------------------------------------------------------------------

TEST(DaemonSetNotReadyTest, SeverityGrowsWithTheShareMissingAndTheAge) {
  struct Case {
    int64_t desired, ready, age;
    Severity want;
  } cases[] = {
      {4, 2, 2 * kDay, Severity::kCritical},  // half the nodes, for days
      {4, 2, 10 * 60, Severity::kError},      // half the nodes, just now
      {10, 9, 2 * kHour, Severity::kError},   // one node, for hours
      {10, 9, 10 * 60, Severity::kWarning},   // one node, just now
  };
  for (const auto& c : cases) {
    k8s::Snapshot snap;
    snap.daemonsets = {Plugin(c.desired, c.ready)};
    snap.nodes = {FabricNode("gpu-1")};
    snap.pods = {PluginPod(snap.daemonsets[0], "gpu-1", c.age, "CrashLoopBackOff")};
    auto f = Of(audit::Run(snap, Opt()), "daemonset.not-ready");
    ASSERT_EQ(f.size(), 1u) << c.desired << "/" << c.ready;
    EXPECT_EQ(f[0].severity, c.want) << c.desired << "/" << c.ready << " for " << c.age << " s";
    EXPECT_EQ(f[0].subject, "kube-system/rdma-shared-dp-ds");
    ASSERT_TRUE(f[0].since.has_value());
    EXPECT_EQ(*f[0].since, Ago(c.age));
  }
}

TEST(DaemonSetNotReadyTest, MessageSaysNeverReadyWhyAndWhichImage) {
  k8s::Snapshot snap;
  snap.daemonsets = {Plugin(2, 0)};
  snap.nodes = {FabricNode("gpu-1"), FabricNode("gpu-2")};
  snap.pods = {PluginPod(snap.daemonsets[0], "gpu-1", 3 * kDay, "CrashLoopBackOff"),
               PluginPod(snap.daemonsets[0], "gpu-2", 3 * kDay, "ImagePullBackOff")};
  auto f = Of(audit::Run(snap, Opt()), "daemonset.not-ready");
  ASSERT_EQ(f.size(), 1u);
  const std::string& m = f[0].message;
  EXPECT_TRUE(Has(m, "0 of 2 pods ready (missing on 100% of its nodes)")) << m;
  EXPECT_TRUE(Has(m, "never became ready (3 days)")) << m;
  EXPECT_TRUE(Has(m, "pods waiting: CrashLoopBackOff, ImagePullBackOff")) << m;
  EXPECT_TRUE(Has(m, "restart counts up to 40")) << m;
  EXPECT_TRUE(Has(m, "image ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1")) << m;
  EXPECT_EQ(f[0].evidence["never_ready"], true);
  EXPECT_EQ(f[0].evidence["device_plugin"], true);
  EXPECT_EQ(f[0].evidence["age_days"], 3);
  ASSERT_EQ(f[0].evidence["not_ready_pods"].size(), 2u);
  EXPECT_EQ(f[0].evidence["not_ready_pods"][0]["node"], "gpu-1");
  // Its crash-looping pods are told once, by daemonset.not-ready.
  EXPECT_TRUE(Of(audit::Run(snap, Opt()), "pod.crashloop").empty());
}

TEST(DaemonSetNotReadyTest, APodThatWasReadyOnceIsNotNeverReady) {
  k8s::Snapshot snap;
  snap.daemonsets = {Plugin(1, 0)};
  k8s::Pod p = PluginPod(snap.daemonsets[0], "gpu-1", 5 * kDay, "CrashLoopBackOff");
  p.conditions = {Cond("Ready", "False", 2 * kHour)};  // lost readiness long after its start
  snap.pods = {p};
  auto f = Of(audit::Run(snap, Opt()), "daemonset.not-ready");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(Has(f[0].message, "not fully ready for 2 hours")) << f[0].message;
  EXPECT_EQ(f[0].evidence["never_ready"], false);
}

TEST(DaemonSetNotReadyTest, AReadyOrEmptyDaemonSetSaysNothing) {
  k8s::Snapshot snap;
  snap.daemonsets = {Plugin(3, 3), Plugin(0, 0)};
  snap.daemonsets[1].name = "scheduled-nowhere";
  EXPECT_TRUE(Of(audit::Run(snap, Opt()), "daemonset.not-ready").empty());
}

// --- pod.crashloop, node.not-ready ---------------------------------------------------------------

TEST(CrashLoopTest, ACrashLoopingPodIsAnErrorWithItsLastExit) {
  k8s::Snapshot snap;
  k8s::Pod p;
  p.ns = "ml";
  p.name = "trainer-0";
  p.node_name = "gpu-3";
  p.created = Ago(2 * kDay);
  p.conditions = {Cond("Ready", "False", 5 * kHour)};
  k8s::ContainerStatus s;
  s.name = "pytorch";
  s.waiting_reason = "CrashLoopBackOff";
  s.restart_count = 17;
  s.last_terminated_reason = "Error";
  s.last_exit_code = 134;
  p.statuses = {s};
  snap.pods = {p};
  auto f = Of(audit::Run(snap, Opt()), "pod.crashloop");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].subject, "ml/trainer-0");
  EXPECT_EQ(f[0].message,
            "container pytorch has been crash looping for 5 hours (17 restarts); last exit Error "
            "(code 134)");
  EXPECT_EQ(f[0].evidence["node"], "gpu-3");
}

TEST(NodeNotReadyTest, ANotReadyNodeSaysForHowLongAndWhy) {
  k8s::Snapshot snap;
  k8s::Node n = FabricNode("gpu-1");
  n.conditions = {Cond("Ready", "Unknown", 2 * kDay, "NodeStatusUnknown")};
  n.unschedulable = true;
  snap.nodes = {n, FabricNode("gpu-2")};
  auto f = Of(audit::Run(snap, Opt()), "node.not-ready");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "gpu-1");
  EXPECT_EQ(f[0].message, "Ready is Unknown for 2 days (NodeStatusUnknown)");
  EXPECT_EQ(f[0].evidence["unschedulable"], true);
}

// --- daemonset.coverage, node.rdma.unadvertised ------------------------------------------------

TEST(CoverageOfFabricNodesTest, NoDevicePluginAtAllIsOneClusterFinding) {
  k8s::Snapshot snap;
  snap.nodes = {FabricNode("gpu-1"), FabricNode("gpu-2")};
  auto f = Of(audit::Run(snap, Opt()), "daemonset.coverage");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].subject, "cluster");
  EXPECT_TRUE(Has(f[0].message, "2 nodes have RDMA hardware")) << f[0].message;
  EXPECT_TRUE(Has(f[0].message, "--device-plugin NS/NAME")) << f[0].message;
}

TEST(CoverageOfFabricNodesTest, EachUncoveredNodeSaysWhy) {
  k8s::Snapshot snap;
  k8s::DaemonSet ds = Plugin(3, 2);
  ds.node_selector = {{"rdma", "yes"}};
  snap.daemonsets = {ds};
  k8s::Node ready = FabricNode("gpu-ready");
  k8s::Node waiting = FabricNode("gpu-waiting");
  k8s::Node absent = FabricNode("gpu-absent");
  k8s::Node excluded = FabricNode("gpu-excluded");
  for (k8s::Node* n : {&ready, &waiting, &absent}) n->labels["rdma"] = "yes";
  excluded.labels["rdma"] = "no";
  snap.nodes = {ready, waiting, absent, excluded};
  snap.pods = {PluginPod(ds, "gpu-ready", kDay),
               PluginPod(ds, "gpu-waiting", kDay, "CrashLoopBackOff")};
  std::map<std::string, std::string> why;
  for (const auto& f : Of(audit::Run(snap, Opt()), "daemonset.coverage"))
    why[f.subject] = f.message;
  EXPECT_EQ(why.count("gpu-ready"), 0u);
  EXPECT_TRUE(Has(why["gpu-waiting"],
                  "pod kube-system/rdma-shared-dp-ds-gpu-waiting of kube-system/rdma-shared-dp-ds "
                  "is not ready"))
      << why["gpu-waiting"];
  EXPECT_TRUE(Has(why["gpu-absent"], "no pod of kube-system/rdma-shared-dp-ds runs there"))
      << why["gpu-absent"];
  EXPECT_TRUE(Has(why["gpu-excluded"],
                  "excluded by the nodeSelector of "
                  "kube-system/rdma-shared-dp-ds (node lacks rdma=yes)"))
      << why["gpu-excluded"];
  EXPECT_EQ(why.size(), 3u);
}

TEST(CoverageOfFabricNodesTest, RdmaResourcesMustBeAdvertisedAndNonZero) {
  k8s::Snapshot snap;
  snap.daemonsets = {Plugin(4, 4)};
  snap.nodes = {FabricNode("none", {{"nvidia.com/gpu", "8"}}),
                FabricNode("zero", {{"rdma/ib", "0"}}), FabricNode("quantity", {{"rdma/ib", "1k"}}),
                FabricNode("ok")};
  for (const auto& n : snap.nodes) snap.pods.push_back(PluginPod(snap.daemonsets[0], n.name, kDay));
  std::map<std::string, Finding> by_node;
  for (const auto& f : Of(audit::Run(snap, Opt()), "node.rdma.unadvertised"))
    by_node[f.subject] = f;
  ASSERT_EQ(by_node.size(), 2u);
  EXPECT_TRUE(Has(by_node["none"].message, "allocatable has no RDMA resource"))
      << by_node["none"].message;
  EXPECT_TRUE(Has(by_node["none"].message, "(RDMA resources considered: rdma/*, "))
      << by_node["none"].message;
  EXPECT_TRUE(Has(by_node["zero"].message, "every RDMA resource is 0")) << by_node["zero"].message;
  EXPECT_EQ(by_node["zero"].evidence["rdma_resources"]["rdma/ib"], "0");
}

TEST(CoverageOfFabricNodesTest, ConfiguredResourcesAreConsideredAndNamed) {
  k8s::Snapshot snap;
  snap.daemonsets = {Plugin(1, 1)};
  snap.nodes = {FabricNode("sriov", {{"example.com/mlnx_pool", "4"}})};
  snap.pods = {PluginPod(snap.daemonsets[0], "sriov", kDay)};
  Options opt = Opt();
  auto before = Of(audit::Run(snap, opt), "node.rdma.unadvertised");
  ASSERT_EQ(before.size(), 1u);
  opt.plugin_config.rdma_resources = {"example.com/mlnx_pool"};
  EXPECT_TRUE(Of(audit::Run(snap, opt), "node.rdma.unadvertised").empty());
  opt.plugin_config.rdma_resources.clear();
  opt.rdma_resources = {"example.com/mlnx_pool"};
  EXPECT_TRUE(Of(audit::Run(snap, opt), "node.rdma.unadvertised").empty());
}

// --- recognisers ---------------------------------------------------------------------------

TEST(RecogniserTest, FabricNodes) {
  k8s::Node n;
  Options opt = Opt();
  EXPECT_FALSE(IsFabricNode(n, opt));
  for (const auto& label : FabricNodeLabels()) {
    k8s::Node labelled;
    labelled.labels[label] = "true";
    EXPECT_TRUE(IsFabricNode(labelled, opt)) << label;
    labelled.labels[label] = "false";
    EXPECT_FALSE(IsFabricNode(labelled, opt)) << label;
  }
  // --fabric-nodes replaces the labels: a key alone needs the label, k=v its value.
  n.labels = {{"feature.node.kubernetes.io/pci-15b3.present", "true"}, {"pool", "a"}};
  opt.fabric_selector = {{"pool", "b"}};
  EXPECT_FALSE(IsFabricNode(n, opt));
  opt.fabric_selector = {{"pool", ""}};
  EXPECT_TRUE(IsFabricNode(n, opt));
}

TEST(RecogniserTest, DevicePluginsByNameOrImageOrFlag) {
  Options opt = Opt();
  k8s::DaemonSet ds;
  ds.ns = "net";
  ds.name = "my-plugin";
  EXPECT_FALSE(IsDevicePlugin(ds, opt));
  ds.images = {"nvcr.io/nvidia/cloud-native/k8s-rdma-shared-dev-plugin:v1.4"};
  EXPECT_TRUE(IsDevicePlugin(ds, opt));
  ds.images.clear();
  ds.name = "kube-sriov-network-device-plugin-amd64";
  EXPECT_TRUE(IsDevicePlugin(ds, opt));
  ds.name = "aws-efa-k8s-device-plugin-daemonset";
  EXPECT_TRUE(IsDevicePlugin(ds, opt));
  // --device-plugin names exactly the DaemonSets, and nothing else counts.
  opt.device_plugins = {"net/custom"};
  EXPECT_FALSE(IsDevicePlugin(ds, opt));
  ds.name = "custom";
  EXPECT_TRUE(IsDevicePlugin(ds, opt));
}

TEST(RecogniserTest, RdmaResources) {
  Options opt = Opt();
  for (const char* yes : {"rdma/hca_shared_devices_a", "rdma/ib", "vpc.amazonaws.com/efa",
                          "nvidia.com/rdma_pool", "nvidia.com/hostdev", "nvidia.com/mlnxnics"}) {
    EXPECT_TRUE(IsRdmaResource(yes, opt)) << yes;
  }
  for (const char* no :
       {"nvidia.com/gpu", "cpu", "example.com/rdma", "rdmax/ib", "vpc.amazonaws.com/efa-extra"}) {
    EXPECT_FALSE(IsRdmaResource(no, opt)) << no;
  }
  opt.rdma_resources = {"example.com/rdma"};
  EXPECT_TRUE(IsRdmaResource("example.com/rdma", opt));
}

TEST(ParseSelectorTest, TermsAndErrors) {
  ASSERT_OK_AND_ASSIGN(k8s::StringMap sel, ParseSelector(" pool = a ,gpu"));
  EXPECT_EQ(sel, (k8s::StringMap{{"pool", "a"}, {"gpu", ""}}));
  auto neq = ParseSelector("pool!=a");
  EXPECT_EQ(neq.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(neq.status().message(), "\"pool!=a\"")) << neq.status().message();
  EXPECT_FALSE(ParseSelector("=a").ok());
  EXPECT_EQ(ParseSelector(",,").status().message(), "--fabric-nodes: empty selector");
}

TEST(TopologyLabelTest, TheFirstWellKnownLabelEveryNodeCarries) {
  k8s::Node a, b;
  a.labels = {{"network.topology.nvidia.com/block", "b1"}, {"topology.kubernetes.io/zone", "z"}};
  b.labels = {{"cloud.google.com/gce-topology-block", "g"}, {"topology.kubernetes.io/zone", "z"}};
  EXPECT_EQ(TopologyLabel({&a, &b}, ""), "topology.kubernetes.io/zone");  // the one both carry
  b.labels["network.topology.nvidia.com/block"] = "b2";
  EXPECT_EQ(TopologyLabel({&a, &b}, ""), "network.topology.nvidia.com/block");
  EXPECT_EQ(TopologyLabel({&a, &b}, "rack"), "rack");  // --topology-label wins
  EXPECT_EQ(TopologyLabel({&a, nullptr}, ""), "");     // a node not known: none fits
  EXPECT_EQ(TopologyLabel({}, ""), "");
}

// --- Run: order and catalogue --------------------------------------------------------------

// A cluster where most checks fire at once.
k8s::Snapshot Troubled() {
  k8s::Snapshot snap;
  snap.daemonsets = {Plugin(3, 1)};
  k8s::Node down = FabricNode("gpu-down", {});
  down.conditions = {Cond("Ready", "False", 3 * kDay, "KubeletNotReady")};
  snap.nodes = {FabricNode("gpu-1"), FabricNode("gpu-2"), down};
  snap.pods = {PluginPod(snap.daemonsets[0], "gpu-1", 20 * kDay),
               PluginPod(snap.daemonsets[0], "gpu-2", 2 * kDay, "CrashLoopBackOff")};
  k8s::Pod loop;
  loop.ns = "ml";
  loop.name = "job-0";
  loop.conditions = {Cond("Ready", "False", kHour)};
  k8s::ContainerStatus s;
  s.name = "main";
  s.waiting_reason = "CrashLoopBackOff";
  loop.statuses = {s};
  snap.pods.push_back(loop);
  return snap;
}

TEST(RunTest, GroupedBySubjectWorstFirstThenOldest) {
  std::vector<Finding> all = audit::Run(Troubled(), Opt());
  ASSERT_GE(all.size(), 5u);
  // Subjects stay together, and a group never follows one with a milder worst severity.
  std::vector<std::string> order;
  std::map<std::string, Severity> worst;
  for (const auto& f : all) {
    if (order.empty() || order.back() != f.subject) {
      EXPECT_EQ(std::count(order.begin(), order.end(), f.subject), 0) << f.subject << " split";
      order.push_back(f.subject);
    }
    worst[f.subject] = std::max(worst[f.subject], f.severity);
  }
  for (size_t i = 1; i < order.size(); ++i) {
    EXPECT_GE(worst[order[i - 1]], worst[order[i]]) << order[i - 1] << " before " << order[i];
  }
  // The critical DaemonSet (2 of 3 missing for 2 days) leads; inside gpu-down's group, the
  // errors come before anything milder.
  EXPECT_EQ(all[0].check, "daemonset.not-ready");
  EXPECT_EQ(all[0].severity, Severity::kCritical);
  std::vector<Severity> down;
  for (const auto& f : all) {
    if (f.subject == "gpu-down") down.push_back(f.severity);
  }
  ASSERT_GE(down.size(), 2u);  // node.not-ready, daemonset.coverage, node.rdma.unadvertised
  EXPECT_TRUE(std::is_sorted(down.rbegin(), down.rend()));
}

TEST(RunTest, EveryIdReportedIsInTheCatalogueOnce) {
  const auto& ids = CheckIds();
  std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size()) << "a check id listed twice";
  std::set<std::string> seen;
  for (const auto& f : audit::Run(Troubled(), Opt())) {
    seen.insert(f.check);
    EXPECT_TRUE(unique.count(f.check)) << f.check << " is not in CheckIds()";
  }
  for (const char* id : {"daemonset.not-ready", "daemonset.coverage", "node.rdma.unadvertised",
                         "node.not-ready", "pod.crashloop"}) {
    EXPECT_TRUE(seen.count(id)) << id << " did not fire on the troubled cluster";
  }
}

TEST(SummaryTableTest, CountAndWorstPerCheck) {
  std::vector<Finding> findings = {
      {"pod.crashloop", Severity::kError, "a", "", std::nullopt, {}},
      {"node.not-ready", Severity::kWarning, "b", "", std::nullopt, {}},
      {"node.not-ready", Severity::kCritical, "c", "", std::nullopt, {}},
  };
  Table t = SummaryTable(findings);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"CHECK", "FINDINGS", "WORST"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"node.not-ready", "2", "critical"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"pod.crashloop", "1", "error"}));
}

}  // namespace
}  // namespace tocsin::audit
