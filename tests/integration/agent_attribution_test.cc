// `tocsin agent`'s attribution and footprint end to end: what a running agent maps (no TLS stack
// without Kubernetes writes, no gRPC without attribution) and the pods' devices from a fake
// kubelet's PodResources socket until it goes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent_process.h"
#include "run_binary.h"
#include "testing/fake_kubelet.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::AgentProcess;
using testing::Base;
using testing::CopyFixtureNode;
using testing::Maps;
using testing::MetricValue;
using testing::Ready;
using testing::WriteFile;

const std::string kNodes = std::string(TOCSIN_SOURCE_DIR) + "/testdata/nodes/";

// The agent runs on every node: the TLS stack (OpenSSL, cpp-httplib: the admission webhook's
// module), libcurl (the Kubernetes writes, off here) and gRPC (the PodResources module, which
// only the pods task's child process loads) are never mapped.
TEST(AgentCliTest, AnAgentWithoutKubernetesWritesMapsNoTlsStack) {
  for (bool attribution : {true, false}) {
    AgentProcess a(Base(kNodes + "ib-healthy",
                        attribution ? std::vector<std::string>{"--nvml-library", FAKE_NVML,
                                                               "--pod-resources-socket",
                                                               "/nonexistent/kubelet.sock"}
                                    : std::vector<std::string>{"--nvml-library", FAKE_NVML,
                                                               "--no-pod-resources"}));
    ASSERT_GT(a.port(), 0) << a.err();
    ASSERT_TRUE(Ready(a)) << a.err();
    std::string maps = Maps(a);
    ASSERT_NE(maps.find("tocsin"), std::string::npos) << "not the agent's maps";
    for (const char* lib : {"libssl", "libcrypto", "libcpp-httplib", "tocsin-https", "libcurl",
                            "libgrpc", "libabsl", "tocsin-podresources", "libprotobuf"}) {
      EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped by the agent";
    }
    std::string text = a.Get("/metrics").second;
    if (attribution) {
      EXPECT_EQ(MetricValue(text, "tocsin_podresources_up"), 0) << text;
    } else {
      EXPECT_EQ(text.find("tocsin_podresources_up"), std::string::npos) << text;
    }
  }
}

// Issue 20: which pod holds which GPUs and RDMA devices, from the kubelet's PodResources socket
// (a fake kubelet over gRPC): GPUs by the PCI address the gpu task names them by, RDMA devices
// (an SR-IOV VF too) by their device; a hostile answer capped and counted; the socket gone, up 0
// and no attribution left behind.
TEST(AgentCliTest, PodResourcesAttributeDevicesToPodsUntilTheSocketGoes) {
  std::string root = CopyFixtureNode("ib-healthy");
  auto put = [](const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    WriteFile(path, text);
  };
  for (const char* gpu : {"0000:03:00.0", "0000:04:00.0"}) {
    put(root + "/proc/driver/nvidia/gpus/" + gpu + "/information",
              std::string("Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-fake-") + gpu +
                  "\nBus Location: \t " + gpu + "\n");
  }
  put(root + "/sys/bus/pci/devices/0000:05:00.2/infiniband/mlx5_4/node_type", "1: CA\n");
  std::string answer = root + "/answer.json";
  WriteFile(answer, R"({"pods": [{"namespace": "ml", "name": "llm-0", "containers": [
      {"name": "trainer", "devices": [
        {"resource": "nvidia.com/gpu", "ids": ["GPU-fake-0000:03:00.0", "GPU-fake-0000:04:00.0"]},
        {"resource": "nvidia.com/sriov_rdma", "ids": ["0000:05:00.2"]},
        {"resource": "rdma/hca_shared_devices_a", "ids": ["0000:45:00.0"]}]}]}],
    "synth_pods": 300, "synth_devices": 2, "long": 400})");
  std::string socket = root + "/kubelet.sock";
  ::tocsin::testing::FakeKubelet kubelet(socket, answer);
  ASSERT_TRUE(kubelet.ok()) << kubelet.error();

  AgentProcess a(Base(root, {"--nvml-library", FAKE_NVML, "--pod-resources-socket", socket,
                             "--interval", "pods=4s", "--timeout", "pods=4s"}));
  ASSERT_GT(a.port(), 0) << a.err();
  std::string text;
  ASSERT_TRUE(a.WaitForMetrics(
      [&](const std::string& t) { return MetricValue(t, "tocsin_podresources_up") == 1; },
      seconds(20), &text))
      << text << a.err();
  for (std::string device :
       {"device_kind=\"gpu\",device=\"0000:03:00.0\"", "device_kind=\"gpu\",device=\"0000:04:00.0\"",
        "device_kind=\"rdma\",device=\"mlx5_4\"", "device_kind=\"rdma\",device=\"mlx5_1\""}) {
    EXPECT_EQ(MetricValue(text, "tocsin_pod_device_info{namespace=\"ml\",pod=\"llm-0\"," + device +
                                    "}"),
              1)
        << device << "\n" << text;
  }
  // The GPUs' names are the gpu task's own: the join in PromQL holds.
  EXPECT_NE(text.find("tocsin_gpu_info{gpu=\"0000:03:00.0\""), std::string::npos) << text;
  // 301 pods and a 400-character name: 256 kept, the rest counted.
  EXPECT_EQ(MetricValue(text, "tocsin_pod_attribution_dropped{what=\"pods\"}"), 301 - 256 + 1)
      << text;
  EXPECT_EQ(text.find(std::string(300, 'x')), std::string::npos);
  // Without Kubernetes no pod's labels are known: no job is named.
  EXPECT_EQ(text.find("tocsin_pod_info{"), std::string::npos) << text;
  // The call was a child's (tocsin agent --pod-resources-call): the agent maps no gRPC at all.
  std::string maps = Maps(a);
  for (const char* lib : {"libgrpc", "libabsl", "tocsin-podresources"}) {
    EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped by the agent";
  }

  kubelet.Stop();
  ASSERT_TRUE(a.WaitForMetrics(
      [&](const std::string& t) { return MetricValue(t, "tocsin_podresources_up") == 0; },
      seconds(20), &text))
      << text << a.err();
  EXPECT_EQ(text.find("tocsin_pod_device_info{"), std::string::npos) << text;
  EXPECT_EQ(MetricValue(text, "tocsin_task_runs_total{task=\"pods\",outcome=\"error\"}"), 0)
      << text;
  fs::remove_all(root);
}

}  // namespace
}  // namespace tocsin
