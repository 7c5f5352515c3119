#include "audit/jobs.h"

#include <gtest/gtest.h>

namespace tocsin::audit {
namespace {

k8s::Node MakeNode(const std::string& name, bool fabric) {
  k8s::Node n;
  n.name = name;
  if (fabric) {
    n.labels["feature.node.kubernetes.io/pci-15b3.present"] = "true";
    n.allocatable["rdma/hca_shared_devices_a"] = "1000";
  }
  return n;
}

// A pod of an MPIJob: `role_key` is the operator's role label, `role` its value.
k8s::Pod MpiPod(const std::string& name, const std::string& node, const std::string& role_key,
                const std::string& role, bool rdma, bool gpu = false) {
  k8s::Pod p;
  p.ns = "ml";
  p.name = name;
  p.node_name = node;
  p.phase = "Running";
  p.labels["training.kubeflow.org/job-name"] = "bert";
  p.labels[role_key] = role;
  k8s::Container c;
  c.name = "mpi";
  if (rdma) {
    c.limits["rdma/hca_shared_devices_a"] = "1";
    c.capabilities_add.push_back("IPC_LOCK");
  }
  if (gpu) c.limits["nvidia.com/gpu"] = "8";
  p.containers.push_back(c);
  p.shared_volumes.push_back("data");
  return p;
}

k8s::Snapshot MpiCluster(const std::string& role_key, bool gpu_launcher) {
  k8s::Snapshot snap;
  snap.nodes = {MakeNode("gpu-1", true), MakeNode("gpu-2", true), MakeNode("cpu-1", false)};
  snap.pods = {MpiPod("bert-launcher", "cpu-1", role_key, "launcher", false, gpu_launcher),
               MpiPod("bert-worker-0", "gpu-1", role_key, "worker", true, true),
               MpiPod("bert-worker-1", "gpu-2", role_key, "worker", true, true)};
  return snap;
}

std::vector<Finding> Jobs(const k8s::Snapshot& snap) {
  std::vector<Finding> out;
  CheckJobs(snap, Options{}, out);
  return out;
}

// mpi-operator v2 (job-role) and training-operator's MPIJob (replica-type): a launcher on a CPU
// node only runs mpirun, so the job is placed well and its RDMA pods all hold IPC_LOCK.
TEST(AuditJobsTest, MpiLauncherOnACpuNodeIsNotAFabricPod) {
  for (const char* key : {"training.kubeflow.org/job-role", "training.kubeflow.org/replica-type"}) {
    SCOPED_TRACE(key);
    auto findings = Jobs(MpiCluster(key, false));
    EXPECT_TRUE(findings.empty()) << findings[0].check << ": " << findings[0].message;
  }
}

// A launcher that asks for GPUs runs ranks itself (mpi-operator puts it in the hostfile).
TEST(AuditJobsTest, GpuLauncherCountsAsATrainingPod) {
  auto findings = Jobs(MpiCluster("training.kubeflow.org/job-role", true));
  std::vector<std::string> checks;
  for (const auto& f : findings) checks.push_back(f.check);
  EXPECT_EQ(checks, (std::vector<std::string>{"job.rdma.no-ipc-lock", "job.placement.non-fabric"}));
  for (const auto& f : findings) {
    if (f.check == "job.placement.non-fabric") {
      EXPECT_EQ(f.message, "1 of its 3 nodes has no RDMA fabric: cpu-1");
    } else {
      EXPECT_EQ(f.evidence["pods"], nlohmann::json::array({"bert-launcher"}));
    }
  }
}

// Workers spread over a fabric and a CPU node are still flagged; the launcher is not counted.
TEST(AuditJobsTest, WorkerOnACpuNodeIsFlaggedAndLauncherNamed) {
  k8s::Snapshot snap = MpiCluster("training.kubeflow.org/job-role", false);
  snap.nodes.push_back(MakeNode("cpu-2", false));
  snap.pods[2].node_name = "cpu-2";
  auto findings = Jobs(snap);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].check, "job.placement.non-fabric");
  EXPECT_EQ(findings[0].evidence["nodes"], nlohmann::json::array({"cpu-2"}));
  EXPECT_EQ(findings[0].evidence["launchers_not_counted"],
            nlohmann::json::array({"bert-launcher"}));
}

// Without RDMA in any worker, a launcher does not make the job multi-node by itself.
TEST(AuditJobsTest, LauncherDoesNotMakeASingleNodeJobMultiNode) {
  k8s::Snapshot snap = MpiCluster("training.kubeflow.org/job-role", false);
  snap.pods.pop_back();  // one worker on gpu-1, the launcher on cpu-1
  EXPECT_TRUE(Jobs(snap).empty());
}

}  // namespace
}  // namespace tocsin::audit
