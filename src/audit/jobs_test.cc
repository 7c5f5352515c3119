#include "audit/jobs.h"

#include <gtest/gtest.h>

#include <set>

#include "audit/catalog.h"
#include "k8s/decode.h"
#include "testing/status_matchers.h"

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

std::set<std::string> Ids(const std::vector<Finding>& findings) {
  std::set<std::string> out;
  for (const auto& f : findings) out.insert(f.check);
  return out;
}

// A PyTorchJob as submitted: no pods yet, judged by its templates (2 workers + a master).
constexpr char kPyTorchJob[] = R"({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
  "metadata": {"name": "ft", "namespace": "ml"},
  "spec": {"pytorchReplicaSpecs": {
    "Master": {"replicas": 1, "template": {"spec": {"containers": [
      {"name": "p", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}},
    "Worker": {"replicas": 2, "template": {"spec": {
      "volumes": [{"name": "ib", "hostPath": {"path": "/dev/infiniband/"}}],
      "containers": [{"name": "p", "env": [{"name": "NCCL_NET", "value": "Socket"}],
                      "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}})";

TEST(AuditJobsTest, AJobWithoutPodsIsJudgedByItsTemplates) {
  k8s::Snapshot snap;
  snap.nodes = {MakeNode("gpu-1", true), MakeNode("gpu-2", true)};
  for (auto& n : snap.nodes) n.labels["cloud.google.com/gce-topology-block"] = "a";
  ASSERT_OK(k8s::DecodeJson(kPyTorchJob, "job", snap));
  ASSERT_EQ(snap.jobs.size(), 1u);
  ASSERT_EQ(snap.jobs[0].pod_sets.size(), 2u);
  EXPECT_EQ(snap.jobs[0].pod_sets[1].count, 2);
  auto findings = Jobs(snap);
  EXPECT_EQ(Ids(findings),
            (std::set<std::string>{kJobRdmaNotRequested, kJobNcclFallbackEnv,
                                   kJobRdmaHostpathDevices, kJobPlacementNoTopology,
                                   kJobStorageNoSharedVolume}));
  for (const auto& f : findings) EXPECT_EQ(f.subject, "kubeflow/ml/ft");
  for (const auto& f : findings) {
    if (f.check == kJobRdmaHostpathDevices) {
      EXPECT_EQ(f.message.substr(0, 7), "2 of 3 ") << f.message;  // the Worker set counts 2
      EXPECT_EQ(f.evidence["pods"], nlohmann::json::array({"ft/Worker"}));
    }
  }
  // Once its pods exist, they are judged, not the templates (here: none running = finished).
  k8s::Pod done;
  done.ns = "ml";
  done.name = "ft-master-0";
  done.phase = "Succeeded";
  done.labels["training.kubeflow.org/job-name"] = "ft";
  snap.pods.push_back(done);
  EXPECT_TRUE(Jobs(snap).empty());
}

TEST(AuditJobsTest, OwnedSingleAndFinishedTopObjectsAreNotJudged) {
  k8s::Snapshot snap;
  ASSERT_OK(k8s::DecodeJson(R"({"kind": "Job", "metadata": {"name": "one", "namespace": "ml"},
    "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})", "single", snap));
  ASSERT_OK(k8s::DecodeJson(R"({"kind": "Job", "metadata": {"name": "child", "namespace": "ml",
    "ownerReferences": [{"kind": "JobSet", "name": "js", "uid": "u"}]},
    "spec": {"parallelism": 4, "template": {"spec": {"containers": [{"name": "c"}]}}}})",
                            "owned", snap));
  ASSERT_OK(k8s::DecodeJson(R"({"kind": "Job", "metadata": {"name": "done", "namespace": "ml"},
    "spec": {"parallelism": 4, "template": {"spec": {"containers": [{"name": "c"}]}}},
    "status": {"conditions": [{"type": "Complete", "status": "True"}]}})", "done", snap));
  ASSERT_EQ(snap.jobs.size(), 3u);
  EXPECT_TRUE(snap.jobs[1].owned);
  EXPECT_TRUE(snap.jobs[2].finished);
  EXPECT_TRUE(Jobs(snap).empty());
}

TEST(AuditJobsTest, TopologyConstraintsAndIpcLockPlatforms) {
  k8s::Pod p = MpiPod("w", "", "training.kubeflow.org/replica-type", "worker", true, true);
  k8s::ObjectRef top{.kind = "PyTorchJob", .ns = "ml", .name = "bert"};
  top.pod_sets.push_back({.role = "Worker", .count = 4, .pod = p});
  const std::string block = "cloud.google.com/gce-topology-block";
  EXPECT_EQ(Ids(CheckJobObject(top, Options{}, block)),
            std::set<std::string>{kJobPlacementNoTopology});
  EXPECT_TRUE(CheckJobObject(top, Options{}, "").empty());  // no label: nothing to judge by
  for (auto place : {+[](k8s::Pod& x) { x.topology_keys.push_back(
                         "cloud.google.com/gce-topology-block"); },
                     +[](k8s::Pod& x) {
                       x.annotations["kueue.x-k8s.io/podset-required-topology"] = "b";
                     }}) {
    k8s::ObjectRef placed = top;
    place(placed.pod_sets[0].pod);
    EXPECT_TRUE(CheckJobObject(placed, Options{}, block).empty());
  }
  k8s::ObjectRef unlocked = top;
  unlocked.pod_sets[0].pod.containers[0].capabilities_add.clear();
  EXPECT_TRUE(Ids(CheckJobObject(unlocked, Options{}, "")).count(kJobRdmaNoIpcLock));
  Options platform;
  platform.ipc_lock_needed = false;
  EXPECT_TRUE(CheckJobObject(unlocked, platform, "").empty());
  // GPUDirect-TCPX: GKE's interfaces annotation asks for the fabric without a resource.
  k8s::ObjectRef tcpx = top;
  tcpx.pod_sets[0].pod.containers[0].limits.erase("rdma/hca_shared_devices_a");
  EXPECT_TRUE(Ids(CheckJobObject(tcpx, Options{}, "")).count(kJobRdmaNotRequested));
  tcpx.pod_sets[0].pod.annotations[k8s::kGkeInterfacesAnnotation] = "[]";
  EXPECT_FALSE(Ids(CheckJobObject(tcpx, Options{}, "")).count(kJobRdmaNotRequested));
}

}  // namespace
}  // namespace tocsin::audit
