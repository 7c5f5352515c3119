#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "drift/catalog.h"
#include "drift/drift.h"
#include "k8s/fabric_facts.h"

namespace tocsin::drift {
namespace {

k8s::Node GpuNode(const std::string& name, const std::string& kernel = "6.8.0-45") {
  k8s::Node n;
  n.name = name;
  n.uid = "uid-" + name;
  n.labels = {{"node.kubernetes.io/instance-type", "p5.48xlarge"},
              {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
              {"nvidia.com/cuda.driver.major", "550"},
              {"nvidia.com/cuda.driver.minor", "54"},
              {"nvidia.com/cuda.driver.rev", "15"},
              {"kubernetes.io/hostname", name}};
  n.allocatable = {{"rdma/hca_shared_devices_a", "63"}, {"nvidia.com/gpu", "8"}, {"cpu", "190"}};
  n.node_info = {{"kernelVersion", kernel}, {"kubeletVersion", "v1.30.2"}};
  k8s::FabricFacts f;
  f.driver = "24.10-0.7.0";
  f.hcas.push_back({"mlx5_0", "28.39.1002", "MT_0000000838", "InfiniBand", "400", "4096"});
  n.annotations[k8s::kFabricFactsAnnotation] = k8s::EncodeFabricFacts(f);
  return n;
}

k8s::Snapshot Cluster(int nodes, const std::string& prefix) {
  k8s::Snapshot s;
  for (int i = 0; i < nodes; ++i) s.nodes.push_back(GpuNode(prefix + std::to_string(i)));
  k8s::DaemonSet ds;
  ds.ns = "kube-system";
  ds.name = prefix + "rdma-shared-dp-ds";
  ds.uid = prefix + "uid";
  ds.images = {"ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"};
  ds.config_maps = {"rdma-devices"};
  ds.desired = ds.ready = nodes;
  s.daemonsets.push_back(ds);
  s.configmaps.push_back({"kube-system",
                          "rdma-devices",
                          {{"config.json", R"({"configList":[{"resourceName":"hca_shared_devices_a",
                             "rdmaHcaMax":63,"selectors":{"vendors":["15b3"]}}]})"}}});
  k8s::NetworkAttachment nad;
  nad.ns = "train";
  nad.name = "rdma-net";
  nad.type = "macvlan";
  nad.master = "ens1f0";
  nad.mtu = "9000";
  nad.ipam_type = "whereabouts";
  nad.resource_name = "rdma/hca_shared_devices_a";
  s.networks.push_back(nad);
  k8s::Workload w;
  w.kind = "PyTorchJob";
  w.ns = "train";
  w.name = "llm";
  k8s::Container c;
  c.name = "Worker/pytorch";
  c.env = {{"NCCL_IB_HCA", "mlx5"}, {"NCCL_SOCKET_IFNAME", "eth0"}, {"UCX_TLS", "rc"}};
  c.requests = {{"rdma/hca_shared_devices_a", "1"}, {"nvidia.com/gpu", "8"}};
  w.containers.push_back(c);
  s.workloads.push_back(w);
  return s;
}

DiffResult DiffOf(const k8s::Snapshot& a, const k8s::Snapshot& b, const Options& o = {}) {
  return Diff({"staging", "staging.json", &a}, {"prod", "prod.json", &b}, o);
}

std::vector<std::string> Ids(const DiffResult& r) {
  std::vector<std::string> ids;
  for (const auto& f : r.findings) ids.push_back(f.check + " " + f.subject);
  std::sort(ids.begin(), ids.end());
  return ids;
}

const Finding* Find(const DiffResult& r, const std::string& check) {
  for (const auto& f : r.findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

TEST(DiffTest, SameClustersOfOtherSizesAndNamesHaveNoFindings) {
  k8s::Snapshot a = Cluster(3, "stg-");
  k8s::Snapshot b = Cluster(17, "prd-");
  b.networks[0].ns = "prod-train";  // namespaces never count
  b.workloads[0].ns = "prod-train";
  DiffResult r = DiffOf(a, b);
  EXPECT_TRUE(r.findings.empty()) << testing::PrintToString(Ids(r));
  EXPECT_GT(r.items.size(), 10u);
  for (const auto& it : r.items) EXPECT_FALSE(it.differs) << it.name;
}

TEST(DiffTest, RdmaResourceNameAndCountAreErrorsNamingTheJobsThatWillNotSchedule) {
  k8s::Snapshot a = Cluster(2, "a");
  k8s::Snapshot b = Cluster(2, "b");
  for (auto& n : b.nodes) {
    n.allocatable.erase("rdma/hca_shared_devices_a");
    n.allocatable["rdma/hca_shared_devices_b"] = "63";
  }
  DiffResult r = DiffOf(a, b);
  const Finding* f = Find(r, kRdmaResource);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kError);
  EXPECT_NE(f->message.find("jobs asking for rdma/hca_shared_devices_a will not schedule in prod"),
            std::string::npos)
      << f->message;
  EXPECT_EQ(f->evidence["source_a"], "staging.json");
  EXPECT_EQ(f->evidence["source_b"], "prod.json");
  EXPECT_EQ(f->evidence["a"], "63");
  EXPECT_EQ(f->evidence["b"], "(absent)");
}

TEST(DiffTest, MixedClassListsOutliersAndComparesMajorities) {
  k8s::Snapshot a = Cluster(5, "a");
  a.nodes[3].node_info["kernelVersion"] = "6.8.0-49";
  k8s::Snapshot b = Cluster(4, "b");
  DiffResult r = DiffOf(a, b);
  ASSERT_EQ(r.findings.size(), 1u) << testing::PrintToString(Ids(r));
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.check, kClassMixed);
  EXPECT_EQ(f.subject, "class p5.48xlarge/NVIDIA-H100-80GB-HBM3: kernel");
  EXPECT_EQ(f.evidence["majority"], "6.8.0-45");
  EXPECT_EQ(f.evidence["outliers"][0]["node"], "a3");
  EXPECT_EQ(f.evidence["side"], "staging");
}

TEST(DiffTest, SeveritiesByConsequence) {
  k8s::Snapshot a = Cluster(2, "a");
  k8s::Snapshot b = Cluster(2, "b");
  b.daemonsets[0].images = {"nvcr.io/mirror/k8s-rdma-shared-dev-plugin:v1.5.2"};
  b.networks[0].mtu = "4096";
  b.networks[0].ipam_type = "nv-ipam";
  b.workloads[0].containers[0].env["NCCL_IB_DISABLE"] = "1";
  b.workloads[0].containers[0].env["UCX_TLS"] = "tcp";
  for (auto& n : b.nodes) {
    n.labels["nvidia.com/cuda.driver.major"] = "560";
    n.node_info["kubeletVersion"] = "v1.31.0";
    k8s::FabricFacts f;
    f.driver = "24.10-0.7.0";
    f.hcas.push_back({"mlx5_0", "28.40.1000", "MT_0000000838", "InfiniBand", "400", "4096"});
    n.annotations[k8s::kFabricFactsAnnotation] = k8s::EncodeFabricFacts(f);
  }
  DiffResult r = DiffOf(a, b);
  std::map<std::string, Severity> got;
  for (const auto& f : r.findings) got[f.check + " " + f.subject] = f.severity;
  const std::string cls = "class p5.48xlarge/NVIDIA-H100-80GB-HBM3: ";
  std::map<std::string, Severity> want = {
      {"drift.plugin.image device plugin k8s-rdma-shared-dev-plugin", Severity::kWarning},
      {"drift.network.attachment network rdma-net: mtu", Severity::kError},
      {"drift.network.attachment network rdma-net: ipam", Severity::kWarning},
      {"drift.template.nccl template PyTorchJob/llm: NCCL_IB_DISABLE", Severity::kError},
      {"drift.template.env template PyTorchJob/llm: UCX_TLS", Severity::kInfo},
      {"drift.node.driver " + cls + "gpu driver", Severity::kWarning},
      {"drift.node.firmware " + cls + "hca firmware", Severity::kWarning},
      {"drift.node.software " + cls + "kubelet", Severity::kInfo},
  };
  EXPECT_EQ(got, want);
}

TEST(DiffTest, ObjectsOnOneSideOnly) {
  k8s::Snapshot a = Cluster(2, "a");
  k8s::Snapshot b = Cluster(2, "b");
  b.daemonsets[0].images = {"ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.6"};
  b.networks.clear();
  b.workloads.clear();
  b.nodes.push_back(GpuNode("cpu"));  // its DaemonSet still mounts the same config
  b.nodes.back().labels["node.kubernetes.io/instance-type"] = "m5.xlarge";
  DiffResult r = DiffOf(a, b);
  std::vector<std::string> want = {
      "drift.class.missing class m5.xlarge/NVIDIA-H100-80GB-HBM3",
      "drift.network.attachment network rdma-net",
      "drift.plugin.missing device plugin k8s-rdma-shared-dev-plugin",
      "drift.plugin.missing device plugin sriov-network-device-plugin",
      "drift.template.missing template PyTorchJob/llm",
  };
  EXPECT_EQ(Ids(r), want);
}

TEST(DiffTest, AnEmptySideIsNotComparedAgainst) {
  k8s::Snapshot a = Cluster(2, "a");
  a.sriov_policies.push_back({});
  a.sriov_policies.back().resource_name = "ib_vfs";
  k8s::Snapshot b;       // {"kind":"List","items":[]}: a wrong context or namespace
  b.pods.push_back({});  // pods are not compared
  DiffResult r = DiffOf(a, b);
  ASSERT_EQ(Ids(r), std::vector<std::string>{"drift.input.empty side B (prod)"});
  EXPECT_EQ(r.findings[0].severity, Severity::kError);  // not compared: a gate fails
  EXPECT_EQ(r.findings[0].evidence["side"], "prod");
  EXPECT_TRUE(r.items.empty());
  // The same empty file on both sides: one finding per side, each naming it.
  r = Diff({"empty.json", "empty.json", &b}, {"empty.json", "empty.json", &b}, {});
  EXPECT_EQ(Ids(r), (std::vector<std::string>{"drift.input.empty side A (empty.json)",
                                              "drift.input.empty side B (empty.json)"}));
}

TEST(DiffTest, ASideWithoutNodesOrDaemonSetsSaysSoAndComparesTheRest) {
  k8s::Snapshot a = Cluster(2, "a");
  k8s::Snapshot b = Cluster(2, "b");
  b.nodes.clear();
  b.daemonsets.clear();  // its ConfigMap is there, its pools unknown without the plugin
  b.configmaps.clear();
  DiffResult r = DiffOf(a, b);
  EXPECT_EQ(Ids(r), (std::vector<std::string>{"drift.input.empty daemonsets of B (prod)",
                                              "drift.input.empty nodes of B (prod)"}));
}

TEST(DiffTest, ClassLabelsAndFacts) {
  k8s::Node n = GpuNode("x");
  Options o;
  EXPECT_EQ(NodeClass(n, o), "p5.48xlarge/NVIDIA-H100-80GB-HBM3");
  o.class_labels = {"nvidia.com/gpu.product", "missing"};
  EXPECT_EQ(NodeClass(n, o), "NVIDIA-H100-80GB-HBM3");
  o.class_labels = {"missing"};
  EXPECT_EQ(NodeClass(n, o), "(no class label)");
  auto facts = NodeFacts(n, audit::Options{});
  EXPECT_EQ(facts.at("gpu driver"), "550.54.15");
  EXPECT_EQ(facts.at("rdma rdma/hca_shared_devices_a"), "63");
  EXPECT_EQ(facts.at("hca firmware"), "28.39.1002");
  EXPECT_EQ(facts.at("mofed driver"), "24.10-0.7.0");
  EXPECT_EQ(facts.count("rdma nvidia.com/gpu"), 0u);
  n.annotations[k8s::kFabricFactsAnnotation] = "{garbage";
  auto unreadable = NodeFacts(n, audit::Options{});
  EXPECT_EQ(unreadable.count("hca firmware"), 0u);
  EXPECT_EQ(unreadable.count("fabric facts"), 0u);  // not a fact: drift.node.fabric says so
}

// One HCA's facts on every node of b.
void SetFabric(k8s::Snapshot& s, const std::string& driver, const k8s::HcaFacts& hca,
               size_t count = 1) {
  k8s::FabricFacts f;
  f.driver = driver;
  for (size_t i = 0; i < count; ++i) {
    f.hcas.push_back(hca);
    f.hcas.back().name = "mlx5_" + std::to_string(i);
  }
  for (auto& n : s.nodes) n.annotations[k8s::kFabricFactsAnnotation] = k8s::EncodeFabricFacts(f);
}

std::map<std::string, Severity> Severities(const DiffResult& r) {
  std::map<std::string, Severity> got;
  for (const auto& f : r.findings) got[f.check + " " + f.subject] = f.severity;
  return got;
}

TEST(DiffTest, NodeFabricFactsSeverities) {
  const std::string cls = "class p5.48xlarge/NVIDIA-H100-80GB-HBM3: ";
  const k8s::HcaFacts base{"mlx5_0", "28.39.1002", "MT_0000000838", "InfiniBand", "400", "4096"};
  struct Case {
    std::string driver;
    k8s::HcaFacts hca;
    size_t count;
    std::map<std::string, Severity> want;
  };
  auto with = [&](auto field, const char* v) {
    k8s::HcaFacts h = base;
    h.*field = v;
    return h;
  };
  std::vector<Case> cases = {
      {"24.10-0.7.0",
       with(&k8s::HcaFacts::link_layer, "Ethernet"),
       1,
       {{"drift.node.fabric " + cls + "hca link layer", Severity::kError}}},
      {"24.10-0.7.0",
       with(&k8s::HcaFacts::firmware, "28.40.1000"),
       1,
       {{"drift.node.firmware " + cls + "hca firmware", Severity::kWarning}}},
      {"24.10-0.7.0",
       with(&k8s::HcaFacts::board_id, "MT_0000000970"),
       1,
       {{"drift.node.fabric " + cls + "hca board", Severity::kWarning}}},
      {"24.10-0.7.0",
       with(&k8s::HcaFacts::rate, "200"),
       1,
       {{"drift.node.fabric " + cls + "hca rate", Severity::kWarning}}},
      {"24.10-0.7.0",
       with(&k8s::HcaFacts::mtu, "2048"),
       1,
       {{"drift.node.fabric " + cls + "hca mtu", Severity::kWarning}}},
      {"24.10-0.7.0", base, 2, {{"drift.node.fabric " + cls + "hca count", Severity::kWarning}}},
      {"25.01-0.6.0", base, 1, {{"drift.node.driver " + cls + "mofed driver", Severity::kWarning}}},
      {"24.10-1.1.4", base, 1, {{"drift.node.driver " + cls + "mofed driver", Severity::kInfo}}},
  };
  for (const auto& c : cases) {
    k8s::Snapshot a = Cluster(2, "a");
    k8s::Snapshot b = Cluster(3, "b");
    SetFabric(b, c.driver, c.hca, c.count);
    DiffResult r = DiffOf(a, b);
    EXPECT_EQ(Severities(r), c.want) << testing::PrintToString(Ids(r));
    for (const auto& f : r.findings) {
      EXPECT_NE(f.evidence["a"], f.evidence["b"]) << f.subject;
      EXPECT_EQ(f.evidence["source_b"], "prod.json");
    }
  }
}

TEST(DiffTest, FabricFactsAbsentOnOneSideAreNotCompared) {
  k8s::Snapshot a = Cluster(2, "a");
  k8s::Snapshot b = Cluster(3, "b");
  for (auto& n : b.nodes) n.annotations.erase(k8s::kFabricFactsAnnotation);
  DiffResult r = DiffOf(a, b);
  EXPECT_TRUE(r.findings.empty()) << testing::PrintToString(Ids(r));
  r = DiffOf(b, a);
  EXPECT_TRUE(r.findings.empty()) << testing::PrintToString(Ids(r));
  for (const auto& it : r.items) EXPECT_FALSE(it.differs) << it.name;
}

TEST(DiffTest, NodesWithoutTheAgentAreNoOutliersOfTheirClass) {
  k8s::Snapshot a = Cluster(4, "a");
  a.nodes[1].annotations.erase(k8s::kFabricFactsAnnotation);  // the agent not (yet) there
  a.nodes[2].annotations.erase(k8s::kFabricFactsAnnotation);
  a.nodes[3].annotations.erase(k8s::kFabricFactsAnnotation);
  k8s::Snapshot b = Cluster(3, "b");
  SetFabric(b, "24.10-0.7.0",
            {"mlx5_0", "28.40.1000", "MT_0000000838", "InfiniBand", "400", "4096"});
  b.nodes[0].annotations.erase(k8s::kFabricFactsAnnotation);
  DiffResult r = DiffOf(a, b);
  // The majority is that of the nodes that publish facts: a3's firmware against b's.
  std::map<std::string, Severity> want = {
      {"drift.node.firmware class p5.48xlarge/NVIDIA-H100-80GB-HBM3: hca firmware",
       Severity::kWarning}};
  EXPECT_EQ(Severities(r), want);
}

TEST(DiffTest, UnreadableFabricFactsAreAWarningNamingTheNodesNotDrift) {
  k8s::Snapshot a = Cluster(2, "a");
  k8s::Snapshot b = Cluster(3, "b");
  for (auto& n : b.nodes) n.annotations.erase(k8s::kFabricFactsAnnotation);
  b.nodes[1].annotations[k8s::kFabricFactsAnnotation] = R"({"v":7})";
  DiffResult r = DiffOf(a, b);
  ASSERT_EQ(r.findings.size(), 1u) << testing::PrintToString(Ids(r));
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.check, kNodeFabric);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.subject, "class p5.48xlarge/NVIDIA-H100-80GB-HBM3: fabric facts");
  EXPECT_EQ(f.evidence["side"], "prod");
  EXPECT_EQ(f.evidence["nodes"][0]["node"], "b1");
  EXPECT_NE(f.message.find("cannot be read"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("b1"), std::string::npos) << f.message;
  // Beside nodes that publish readable facts: the same warning, and the others still compared.
  for (auto& n : b.nodes) {
    n.annotations[k8s::kFabricFactsAnnotation] =
        a.nodes[0].annotations[k8s::kFabricFactsAnnotation];
  }
  b.nodes[2].annotations[k8s::kFabricFactsAnnotation] = "{garbage";
  r = DiffOf(a, b);
  EXPECT_EQ(Ids(r), std::vector<std::string>{
                        "drift.node.fabric class p5.48xlarge/NVIDIA-H100-80GB-HBM3: fabric facts"});
}

}  // namespace
}  // namespace tocsin::drift
