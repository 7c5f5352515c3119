#include "agent/pods_task.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::agent {
namespace {

using podresources::PodList;

// "k=v,k=v" of each sample of family `name` (labels in their order), as a set.
std::set<std::string> Samples(const TaskOutput& out, const std::string& name) {
  std::set<std::string> s;
  for (const auto& f : out.families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      std::string line;
      for (const auto& l : m.label) line += (line.empty() ? "" : ",") + l.name + "=" + l.value;
      s.insert(line + " " + std::to_string(static_cast<int>(m.gauge.value)));
    }
  }
  return s;
}

double Value(const TaskOutput& out, const std::string& name, const std::string& what = "") {
  for (const auto& f : out.families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      if (what.empty() || (!m.label.empty() && m.label[0].value == what)) return m.gauge.value;
    }
  }
  return -1;
}

k8s::Pod LabelledPod(const std::string& ns, const std::string& name, const std::string& job) {
  k8s::Pod p;
  p.ns = ns;
  p.name = name;
  if (!job.empty()) p.labels["training.kubeflow.org/job-name"] = job;
  return p;
}

class PodsTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two GPUs known to the driver, an HCA and one of its SR-IOV VFs.
    tmp_.Write("proc/driver/nvidia/gpus/0000:03:00.0/information",
               "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 123\n"
               "GPU UUID: \t GPU-11111111-2222-3333-4444-555555555555\n"
               "Bus Location: \t 0000:03:00.0\n");
    tmp_.Write("proc/driver/nvidia/gpus/0000:04:00.0/information",
               "GPU UUID: \t GPU-66666666-2222-3333-4444-555555555555\n");
    tmp_.Write("sys/bus/pci/devices/0000:05:00.0/infiniband/mlx5_0/node_type", "1: CA\n");
    tmp_.Write("sys/bus/pci/devices/0000:05:00.2/infiniband/mlx5_4/node_type", "1: CA\n");
    tmp_.Write("proc/sys/kernel/hostname", "gpu-node-01\n");
  }

  PodList Answer() {
    PodList l;
    l.pods.push_back({"ml",
                      "llm-0",
                      {{"nvidia.com/gpu", "GPU-11111111-2222-3333-4444-555555555555"},
                       {"nvidia.com/gpu", "GPU-66666666-2222-3333-4444-555555555555"},
                       {"nvidia.com/sriov_rdma", "0000:05:00.2"},
                       {"rdma/hca_shared_devices_a", "0000:05:00.0"},
                       {"nvidia.com/gpu", "MIG-aaaa"},     // not a whole GPU: unresolved
                       {"example.com/fpga", "fpga-7"}}});  // not a GPU or RDMA device
    l.pods.push_back({"web", "nginx-1", {}});
    l.dropped.pods = 3;
    return l;
  }

  ::tocsin::testing::ScopedTempDir tmp_{"pods-task-test"};
};

TEST_F(PodsTaskTest, JoinsPodsToTheirJobAndDevicesByTheirNodeNames) {
  int lists = 0;
  PodsTaskOptions o;
  o.node_name = "node-a";
  o.list_resources = [&] { return Result<PodList>(Answer()); };
  o.list_pods = [&]() -> Result<std::vector<k8s::Pod>> {
    ++lists;
    return std::vector<k8s::Pod>{LabelledPod("ml", "llm-0", "llm"),
                                 LabelledPod("web", "nginx-1", "")};
  };
  TaskSpec t = PodsTask(tmp_.path(), o);
  EXPECT_EQ(t.name, "pods");
  EXPECT_TRUE(t.checks.empty());
  ASSERT_OK_AND_ASSIGN(TaskOutput out, t.run());
  EXPECT_EQ(Value(out, "tocsin_podresources_up"), 1);
  EXPECT_EQ(Samples(out, "tocsin_pod_info"),
            (std::set<std::string>{"namespace=ml,pod=llm-0,job_name=llm,node=node-a 1"}));
  EXPECT_EQ(Samples(out, "tocsin_pod_device_info"),
            (std::set<std::string>{"namespace=ml,pod=llm-0,device_kind=gpu,device=0000:03:00.0 1",
                                   "namespace=ml,pod=llm-0,device_kind=gpu,device=0000:04:00.0 1",
                                   "namespace=ml,pod=llm-0,device_kind=rdma,device=mlx5_4 1",
                                   "namespace=ml,pod=llm-0,device_kind=rdma,device=mlx5_0 1"}));
  EXPECT_EQ(Value(out, "tocsin_pod_attribution_dropped", "pods"), 3);
  EXPECT_EQ(Value(out, "tocsin_pod_attribution_dropped", "unresolved"), 2);
  EXPECT_EQ(Value(out, "tocsin_pod_attribution_dropped", "unlabelled"), 0);

  // The same pods again: their labels are known, the API is not asked.
  ASSERT_OK(t.run().status());
  EXPECT_EQ(lists, 1);
}

TEST_F(PodsTaskTest, ASocketThatStopsAnsweringLeavesNoAttribution) {
  bool up = true;
  PodsTaskOptions o;
  o.list_resources = [&]() -> Result<PodList> {
    if (up) return Answer();
    return Status::NotFound("/var/lib/kubelet/pod-resources/kubelet.sock: no such socket");
  };
  o.list_pods = [&]() -> Result<std::vector<k8s::Pod>> {
    return std::vector<k8s::Pod>{LabelledPod("ml", "llm-0", "llm")};
  };
  TaskSpec t = PodsTask(tmp_.path(), o);
  ASSERT_OK_AND_ASSIGN(TaskOutput out, t.run());
  EXPECT_EQ(Samples(out, "tocsin_pod_info"),
            (std::set<std::string>{"namespace=ml,pod=llm-0,job_name=llm,node=gpu-node-01 1"}));
  EXPECT_EQ(Value(out, "tocsin_pod_attribution_dropped", "unlabelled"), 1);  // nginx-1

  up = false;
  ASSERT_OK_AND_ASSIGN(out, t.run());  // the task ran: its outcome is ok, its series say down
  EXPECT_EQ(Value(out, "tocsin_podresources_up"), 0);
  EXPECT_TRUE(Samples(out, "tocsin_pod_info").empty());
  EXPECT_TRUE(Samples(out, "tocsin_pod_device_info").empty());
  EXPECT_EQ(out.families.size(), 1u);
}

TEST_F(PodsTaskTest, WithoutKubernetesDevicesAreAttributedButNoJobIsNamed) {
  PodsTaskOptions o;
  o.list_resources = [&] { return Result<PodList>(Answer()); };
  TaskSpec t = PodsTask(tmp_.path(), o);
  ASSERT_OK_AND_ASSIGN(TaskOutput out, t.run());
  EXPECT_TRUE(Samples(out, "tocsin_pod_info").empty());
  EXPECT_EQ(Samples(out, "tocsin_pod_device_info").size(), 4u);
}

TEST_F(PodsTaskTest, AnApiThatCannotListLeavesNewPodsUnlabelled) {
  PodsTaskOptions o;
  o.list_resources = [&] { return Result<PodList>(Answer()); };
  o.list_pods = []() -> Result<std::vector<k8s::Pod>> {
    return Status::Unavailable("connection refused");
  };
  TaskSpec t = PodsTask(tmp_.path(), o);
  ASSERT_OK_AND_ASSIGN(TaskOutput out, t.run());
  EXPECT_TRUE(Samples(out, "tocsin_pod_info").empty());
  EXPECT_EQ(Value(out, "tocsin_pod_attribution_dropped", "unlabelled"), 2);
}

}  // namespace
}  // namespace tocsin::agent
