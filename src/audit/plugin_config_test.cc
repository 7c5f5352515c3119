#include "audit/plugin_config.h"

#include <gtest/gtest.h>

namespace tocsin::audit {
namespace {

k8s::DaemonSet SriovPlugin(std::vector<std::string> args = {}) {
  k8s::DaemonSet ds;
  ds.ns = "kube-system";
  ds.name = "kube-sriov-device-plugin";
  ds.images = {"ghcr.io/k8snetworkplumbingwg/sriov-network-device-plugin:v3.9.0"};
  ds.args = std::move(args);
  ds.config_maps = {"sriovdp-config"};
  ds.desired = ds.ready = 1;
  return ds;
}

k8s::ConfigMap Config(const std::string& text, const std::string& name = "sriovdp-config") {
  return {"kube-system", name, {{"config.json", text}}};
}

// isRdma in a list of selectors (current releases), in a selector object, and on the pool
// (older releases); resourcePrefix per pool, else --resource-prefix, else intel.com.
constexpr const char* kConfig = R"({"resourceList": [
  {"resourceName": "ib_rdma", "resourcePrefix": "mellanox.com",
   "selectors": [{"vendors": ["15b3"]}, {"drivers": ["mlx5_core"], "isRdma": true}]},
  {"resourceName": "roce_rdma", "selectors": {"vendors": ["15b3"], "isRdma": true}},
  {"resourceName": "old_rdma", "isRdma": true, "selectors": {"vendors": ["15b3"]}},
  {"resourceName": "sriov_eth", "selectors": {"vendors": ["15b3"], "isRdma": false}},
  {"resourceName": "dpdk", "selectors": {"drivers": ["vfio-pci"]}}]})";

TEST(PluginConfigTest, SriovPoolsWithIsRdma) {
  k8s::Snapshot snap;
  snap.daemonsets = {SriovPlugin()};
  snap.configmaps = {Config(kConfig), Config(R"({"resourceList": [{"resourceName": "x",
      "isRdma": true}]})",
                                             "not-mounted")};
  PluginConfig c = ReadPluginConfig(snap, Options{});
  EXPECT_EQ(c.rdma_resources, (std::vector<std::string>{"intel.com/old_rdma", "intel.com/roce_rdma",
                                                        "mellanox.com/ib_rdma"}));
  EXPECT_EQ(c.sources, std::vector<std::string>{"kube-system/sriovdp-config config.json"});
  EXPECT_TRUE(c.errors.empty());

  // The plugin's --resource-prefix replaces the default.
  for (auto args :
       {std::vector<std::string>{"--resource-prefix=example.com"},
        std::vector<std::string>{"-resource-prefix", "example.com"},
        std::vector<std::string>{"sriovdp --log-level=10 --resource-prefix=example.com"}}) {
    snap.daemonsets = {SriovPlugin(args)};
    c = ReadPluginConfig(snap, Options{});
    EXPECT_EQ(c.rdma_resources[0], "example.com/old_rdma") << args[0];
  }
}

TEST(PluginConfigTest, SharedRdmaPluginPoolsAndBadDocuments) {
  k8s::Snapshot snap;
  k8s::DaemonSet shared = SriovPlugin();
  shared.name = "rdma-shared-dp-ds";
  shared.images = {"ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"};
  shared.config_maps = {"rdma-devices"};
  snap.daemonsets = {shared};
  snap.configmaps = {Config(R"({"configList": [{"resourceName": "hca_a"},
      {"resourceName": "hca_b", "resourcePrefix": "example.com"}]})",
                            "rdma-devices")};
  snap.configmaps[0].data["broken.json"] = "{\"configList\": [";
  snap.load_errors = {"kube-system/other: HTTP 403"};
  PluginConfig c = ReadPluginConfig(snap, Options{});
  EXPECT_EQ(c.rdma_resources, (std::vector<std::string>{"example.com/hca_b", "rdma/hca_a"}));
  ASSERT_EQ(c.errors.size(), 2u);
  EXPECT_NE(c.errors[0].find("broken.json: not a JSON object"), std::string::npos);
  EXPECT_EQ(c.errors[1], "kube-system/other: HTTP 403");
}

// A healthy SR-IOV node advertises only the pool its config declares RDMA.
TEST(PluginConfigTest, SriovNodeIsNotUnadvertised) {
  k8s::Snapshot snap;
  k8s::Node n;
  n.name = "gpu-1";
  n.labels["feature.node.kubernetes.io/pci-15b3.present"] = "true";
  n.allocatable = {{"mellanox.com/ib_rdma", "8"}, {"intel.com/sriov_eth", "8"}};
  snap.nodes = {n};
  snap.daemonsets = {SriovPlugin()};
  snap.configmaps = {Config(kConfig)};
  k8s::Pod pod;
  pod.ns = "kube-system";
  pod.name = "kube-sriov-device-plugin-x";
  pod.node_name = "gpu-1";
  pod.owners = {{"DaemonSet", "kube-sriov-device-plugin", ""}};
  pod.conditions = {{"Ready", "True", "", "", std::nullopt}};
  snap.pods = {pod};

  auto without = audit::Run(snap, Options{});
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(without[0].check, "node.rdma.unadvertised");
  EXPECT_NE(without[0].message.find("considered: rdma/*"), std::string::npos) << without[0].message;

  Options opt = WithPluginConfig(snap, Options{});
  EXPECT_TRUE(IsRdmaResource("mellanox.com/ib_rdma", opt));
  EXPECT_FALSE(IsRdmaResource("intel.com/sriov_eth", opt));
  auto with = audit::Run(snap, opt);
  EXPECT_TRUE(with.empty()) << with[0].message;

  // The pool advertises 0: the finding names the names it considered, the config's included.
  snap.nodes[0].allocatable["mellanox.com/ib_rdma"] = "0";
  auto zero = audit::Run(snap, opt);
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_NE(zero[0].message.find("mellanox.com/ib_rdma"), std::string::npos) << zero[0].message;
  EXPECT_EQ(zero[0].evidence["plugin_config_sources"],
            nlohmann::json::array({"kube-system/sriovdp-config config.json"}));
}

}  // namespace
}  // namespace tocsin::audit

namespace tocsin::audit {
namespace {

// Each pool's other fields, for `tocsin diff`; the NicClusterPolicy's plugin configs count too.
TEST(PluginConfigTest, PoolsAndNicClusterPolicyConfigs) {
  k8s::Snapshot snap;
  k8s::NicClusterPolicy ncp;
  ncp.name = "nic-cluster-policy";
  ncp.components.push_back({"rdmaSharedDevicePlugin", "ghcr.io/mellanox",
                            "k8s-rdma-shared-dev-plugin", "v1.5.2",
                            R"({"configList":[{"resourceName":"a","rdmaHcaMax":63,
                                "selectors":{"vendors":["15b3"]}}]})"});
  ncp.components.push_back({"sriovDevicePlugin", "r", "i", "v", "not json"});
  snap.nic_policies.push_back(ncp);
  PluginConfig c = ReadPluginConfig(snap, Options{});
  EXPECT_EQ(c.rdma_resources, std::vector<std::string>{"rdma/a"});
  EXPECT_EQ(c.pools.at("rdma/a"), R"({"rdmaHcaMax":63,"selectors":{"vendors":["15b3"]}})");
  EXPECT_EQ(c.sources, std::vector<std::string>{"NicClusterPolicy nic-cluster-policy "
                                                "rdmaSharedDevicePlugin"});
  EXPECT_EQ(c.errors.size(), 1u);
}

}  // namespace
}  // namespace tocsin::audit
