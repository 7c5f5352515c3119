#include "audit/coverage.h"

#include <gtest/gtest.h>

#include "audit/checks.h"
#include "testing/findings.h"

namespace tocsin::audit {
namespace {

k8s::Node MakeNode(const std::string& name, bool fabric) {
  k8s::Node n;
  n.name = name;
  if (fabric) n.labels["feature.node.kubernetes.io/pci-15b3.present"] = "true";
  return n;
}

// The findings of `check` in `all`.
constexpr auto Of = &::tocsin::testing::FindingsOf;

TEST(CoverageTest, ASnapshotWithNothingToAuditIsAnErrorNamingWhatItHeld) {
  k8s::Snapshot empty;
  Status st = CheckSnapshotUsable(empty);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no objects"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("kubectl get nodes,pods,daemonsets"), std::string::npos);

  k8s::Snapshot lone;
  lone.other_kinds["ConfigMap"] = 1;
  lone.other_kinds["(no kind)"] = 2;
  st = CheckSnapshotUsable(lone);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("1 ConfigMap"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("2 (no kind)"), std::string::npos) << st.message();

  k8s::Snapshot pods_only;
  pods_only.pods.emplace_back();
  EXPECT_TRUE(CheckSnapshotUsable(pods_only).ok());
}

TEST(CoverageTest, APodsOnlySnapshotSaysTheNodeChecksDidNotRun) {
  k8s::Snapshot snap;
  snap.pods.emplace_back();
  Options opt;
  std::vector<Finding> all = audit::Run(snap, opt);
  auto f = Of(all, "audit.input.incomplete");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].subject, "nodes");
  EXPECT_NE(f[0].message.find("node.rdma.unadvertised"), std::string::npos) << f[0].message;
  EXPECT_TRUE(Of(all, "audit.fabric.none").empty());  // nothing to say without nodes
}

TEST(CoverageTest, AClusterWithoutNodesIsAWarningNotOk) {
  k8s::Snapshot snap;
  Options opt;
  auto f = Of(audit::Run(snap, opt), "audit.input.incomplete");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_NE(f[0].message.find("no Node objects were read"), std::string::npos) << f[0].message;
  EXPECT_EQ(f[1].severity, Severity::kInfo);
  EXPECT_EQ(f[1].subject, "pods");
}

TEST(CoverageTest, NoFabricNodeRecognisedIsInfoWithTheRule) {
  k8s::Snapshot snap;
  snap.nodes = {MakeNode("cpu-1", false), MakeNode("cpu-2", false)};
  snap.pods.emplace_back();
  Options opt;
  auto f = Of(audit::Run(snap, opt), "audit.fabric.none");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_NE(f[0].message.find("none of the 2 nodes"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("feature.node.kubernetes.io/pci-15b3.present=true"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[0].evidence["labels"].size(), FabricNodeLabels().size());

  opt.fabric_selector["gpu"] = "yes";
  f = Of(audit::Run(snap, opt), "audit.fabric.none");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("--fabric-nodes selector"), std::string::npos) << f[0].message;

  snap.nodes.push_back(MakeNode("gpu-1", true));
  EXPECT_TRUE(Of(audit::Run(snap, Options{}), "audit.fabric.none").empty());
  EXPECT_TRUE(Of(audit::Run(snap, Options{}), "audit.input.incomplete").empty());
}

}  // namespace
}  // namespace tocsin::audit
