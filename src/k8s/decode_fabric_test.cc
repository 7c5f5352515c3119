#include <gtest/gtest.h>

#include "k8s/decode.h"
#include "testing/status_matchers.h"

namespace tocsin::k8s {
namespace {

// The formats of docs/FORMATS.md, "Fabric configuration".
TEST(DecodeFabricTest, NetworkOperatorObjects) {
  Snapshot s;
  ASSERT_OK(DecodeJson(R"({"kind":"List","items":[
    {"apiVersion":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition",
     "metadata":{"name":"rdma-net","namespace":"train","uid":"x","resourceVersion":"9",
       "annotations":{"k8s.v1.cni.cncf.io/resourceName":"rdma/hca_shared_devices_a"}},
     "spec":{"config":"{\"cniVersion\":\"0.3.1\",\"type\":\"macvlan\",\"master\":\"ens1f0\",\"mtu\":9000,\"ipam\":{\"type\":\"whereabouts\"}}"}},
    {"apiVersion":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition",
     "metadata":{"name":"broken","namespace":"train"},"spec":{"config":"{oops"}},
    {"apiVersion":"sriovnetwork.openshift.io/v1","kind":"SriovNetworkNodePolicy",
     "metadata":{"name":"ib-a","namespace":"nvidia-network-operator"},
     "spec":{"deviceType":"netdevice","isRdma":true,"linkType":"IB","mtu":4096,"numVfs":8,
       "priority":90,"resourceName":"sriov_ib","nodeSelector":{"a":"b"},
       "nicSelector":{"vendor":"15b3","deviceID":"101e","pfNames":["ibp1s0"],
         "rootDevices":["0000:0c:00.0"]}}},
    {"apiVersion":"mellanox.com/v1alpha1","kind":"NicClusterPolicy",
     "metadata":{"name":"nic-cluster-policy"},
     "spec":{"ofedDriver":{"image":"doca-driver","repository":"nvcr.io/nvidia/mellanox",
         "version":"24.10-0.7.0.0","upgradePolicy":{"autoUpgrade":true},"startupProbe":{"periodSeconds":10}},
       "rdmaSharedDevicePlugin":{"image":"k8s-rdma-shared-dev-plugin","repository":"ghcr.io/mellanox",
         "version":"v1.5.2","config":"{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":63}]}"},
       "secondaryNetwork":{"multus":{"image":"multus-cni","repository":"r","version":"v4"},
         "ipoib":{"image":"ipoib-cni","repository":"r","version":"v1"}},
       "nodeAffinity":{"x":1}}}]})",
                       "fabric.json", s));
  ASSERT_EQ(s.networks.size(), 2u);
  EXPECT_EQ(s.networks[0].ns, "train");
  EXPECT_EQ(s.networks[0].resource_name, "rdma/hca_shared_devices_a");
  EXPECT_EQ(s.networks[0].type, "macvlan");
  EXPECT_EQ(s.networks[0].master, "ens1f0");
  EXPECT_EQ(s.networks[0].mtu, "9000");
  EXPECT_EQ(s.networks[0].ipam_type, "whereabouts");
  EXPECT_NE(s.networks[1].config_error.find("{oops"), std::string::npos);
  ASSERT_EQ(s.sriov_policies.size(), 1u);
  const SriovPolicy& p = s.sriov_policies[0];
  EXPECT_EQ(p.resource_name, "sriov_ib");
  EXPECT_TRUE(p.is_rdma);
  EXPECT_EQ(p.link_type, "IB");
  EXPECT_EQ(p.mtu, 4096);
  EXPECT_EQ(p.num_vfs, 8);
  EXPECT_EQ(p.pf_names, std::vector<std::string>{"ibp1s0"});
  EXPECT_EQ(p.device_id, "101e");
  ASSERT_EQ(s.nic_policies.size(), 1u);
  const auto& comps = s.nic_policies[0].components;
  ASSERT_EQ(comps.size(), 4u);
  EXPECT_EQ(comps[0].name, "ofedDriver");
  EXPECT_EQ(comps[0].version, "24.10-0.7.0.0");
  EXPECT_EQ(comps[1].name, "rdmaSharedDevicePlugin");
  EXPECT_NE(comps[1].config.find("rdmaHcaMax"), std::string::npos);
  EXPECT_EQ(comps[2].name, "secondaryNetwork.multus");
  EXPECT_EQ(comps[3].name, "secondaryNetwork.ipoib");
}

TEST(DecodeFabricTest, WorkloadTemplatesOfEveryKind) {
  Snapshot s;
  const char* env = R"("env":[{"name":"NCCL_IB_HCA","value":"mlx5"},{"name":"UCX_TLS","value":"rc"},
      {"name":"FI_PROVIDER","value":"efa"},{"name":"PATH","value":"/bin"},
      {"name":"NCCL_SOCKET_IFNAME","valueFrom":{"configMapKeyRef":{"name":"x","key":"y"}}}],
      "resources":{"requests":{"cpu":"1","rdma/a":"1"},"limits":{"nvidia.com/gpu":"8"}})";
  std::string c = std::string(R"({"name":"t","image":"i",)") + env + "}";
  std::string pod = R"({"spec":{"containers":[)" + c + "]}}";
  std::string doc = R"({"kind":"List","items":[
    {"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"a"},
     "spec":{"template":)" +
                    pod + R"(}},
    {"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"cj-123","namespace":"a",
       "ownerReferences":[{"kind":"CronJob","name":"cj","uid":"u"}]},"spec":{"template":)" +
                    pod + R"(}},
    {"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj","namespace":"a"},
     "spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":)" +
                    pod + R"(}}}},
    {"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"p","namespace":"a"},
     "spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":)" +
                    pod + R"(},
       "Worker":{"replicas":3,"template":)" +
                    pod + R"(}}}},
    {"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{"name":"m","namespace":"a"},
     "spec":{"mpiReplicaSpecs":{"Launcher":{"template":)" +
                    pod + R"(}}}},
    {"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet","metadata":{"name":"js","namespace":"a"},
     "spec":{"replicatedJobs":[{"template":{"spec":{"template":)" +
                    pod + R"(}},"name":"workers"}]}}]})";
  ASSERT_OK(DecodeJson(doc, "w.json", s));
  ASSERT_EQ(s.workloads.size(), 6u);
  EXPECT_EQ(s.workloads[0].kind, "Job");
  EXPECT_FALSE(s.workloads[0].owned);
  EXPECT_TRUE(s.workloads[1].owned);
  EXPECT_EQ(s.workloads[2].kind, "CronJob");
  ASSERT_EQ(s.workloads[3].containers.size(), 2u);
  EXPECT_EQ(s.workloads[3].containers[0].name, "Master/t");
  EXPECT_EQ(s.workloads[3].containers[1].name, "Worker/t");
  EXPECT_EQ(s.workloads[4].containers[0].name, "Launcher/t");
  EXPECT_EQ(s.workloads[5].containers[0].name, "workers/t");
  for (const auto& w : s.workloads) {
    ASSERT_EQ(w.containers.size(), w.kind == "PyTorchJob" ? 2u : 1u) << w.kind;
    const Container& ct = w.containers[0];
    EXPECT_EQ(ct.env.size(), 4u) << w.kind;  // NCCL_*, UCX_*, FI_*; not PATH
    EXPECT_EQ(ct.env.at("UCX_TLS"), "rc");
    EXPECT_EQ(ct.env.at("NCCL_SOCKET_IFNAME"), "");  // valueFrom
    EXPECT_EQ(ct.requests.at("rdma/a"), "1");
    EXPECT_EQ(ct.requests.count("cpu"), 0u);
  }
  EXPECT_EQ(s.jobs.size(), 5u);  // the audit's ObjectRefs are unchanged (CronJob is not a job)
}

TEST(DecodeFabricTest, NodeInfoAndTocsinAnnotations) {
  Snapshot s;
  ASSERT_OK(DecodeJson(R"({"kind":"Node","metadata":{"name":"n","annotations":{
      "tocsin.io/fabric":"{}","node.alpha.kubernetes.io/ttl":"0"}},
    "status":{"nodeInfo":{"kernelVersion":"6.8.0","osImage":"Ubuntu 24.04","bootID":"b",
      "machineID":"m","systemUUID":"s","kubeletVersion":"v1.30.2",
      "containerRuntimeVersion":"containerd://1.7"}}})",
                       "n.json", s));
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].annotations.size(), 1u);
  EXPECT_EQ(s.nodes[0].node_info.size(), 4u);  // volatile ids left out
  EXPECT_EQ(s.nodes[0].node_info.at("kernelVersion"), "6.8.0");
}

TEST(DecodeFabricTest, KeepRawWritesTheKindOfTypedListItems) {
  Snapshot s;
  s.keep_raw = true;
  ASSERT_OK(DecodeJson(R"({"kind":"NodeList","metadata":{"resourceVersion":"5"},"items":[
    {"metadata":{"name":"a"}},{"kind":"Node","metadata":{"name":"b"}},{}]})",
                       "nodes", s));
  ASSERT_EQ(s.raw.size(), 3u);
  EXPECT_EQ(s.raw[0], R"({"kind":"Node","metadata":{"name":"a"}})");
  EXPECT_EQ(s.raw[1], R"({"kind":"Node","metadata":{"name":"b"}})");
  EXPECT_EQ(s.raw[2], R"({"kind":"Node"})");
  Snapshot again;
  std::string list = "{\"kind\":\"List\",\"items\":[" + s.raw[0] + "," + s.raw[1] + "]}";
  ASSERT_OK(DecodeJson(list, "again", again));
  EXPECT_EQ(again.nodes.size(), 2u);
}

}  // namespace
}  // namespace tocsin::k8s
