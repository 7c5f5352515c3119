#include "agent/facts.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::agent {
namespace {

const std::string kNodes = std::string(TOCSIN_SOURCE_DIR) + "/testdata/nodes/";

k8s::FabricFacts FactsOf(const std::string& node) {
  auto env = NewRootedEnv(kNodes + node);
  return CollectFabricFacts(rdma::ScanDevices(*env), *env);
}

TEST(RoceActiveMtuTest, TheNetdevMtuLessRoceHeadersRoundedDownToAnIbMtu) {
  EXPECT_EQ(RoceActiveMtu(9000), 4096);  // jumbo frames
  EXPECT_EQ(RoceActiveMtu(4192), 4096);  // exactly 4096 + 96
  EXPECT_EQ(RoceActiveMtu(4191), 2048);
  EXPECT_EQ(RoceActiveMtu(4200), 4096);
  EXPECT_EQ(RoceActiveMtu(1500), 1024);  // the default Ethernet MTU
  EXPECT_EQ(RoceActiveMtu(352), 256);
  EXPECT_EQ(RoceActiveMtu(351), 0);
  EXPECT_EQ(RoceActiveMtu(-1), 0);
}

TEST(CollectFabricFactsTest, InfiniBandNodeWithMofed) {
  k8s::FabricFacts f = FactsOf("ib-healthy");
  EXPECT_EQ(f.driver, "24.10-0.7.0");  // /sys/module/mlx5_core/version
  ASSERT_EQ(f.hcas.size(), 4u);
  for (size_t i = 0; i < f.hcas.size(); ++i) {
    const auto& h = f.hcas[i];
    EXPECT_EQ(h.name, "mlx5_" + std::to_string(i));
    EXPECT_EQ(h.firmware, "28.39.1002");
    EXPECT_EQ(h.board_id, "MT_0000000838");
    EXPECT_EQ(h.link_layer, "InfiniBand");
    EXPECT_EQ(h.rate, "400 Gb/sec (4X NDR)");  // as the kernel prints it
    EXPECT_EQ(h.mtu, "");  // the IB active MTU is in no sysfs file: never guessed
  }
  // What is published decodes to itself.
  ASSERT_OK_AND_ASSIGN(k8s::FabricFacts back, k8s::DecodeFabricFacts(k8s::EncodeFabricFacts(f)));
  EXPECT_EQ(k8s::EncodeFabricFacts(back), k8s::EncodeFabricFacts(f));
}

TEST(CollectFabricFactsTest, RoceNodeWithTheInTreeDriver) {
  k8s::FabricFacts f = FactsOf("roce");
  EXPECT_EQ(f.driver, "");  // mlx5_core loaded without a version file
  ASSERT_EQ(f.hcas.size(), 2u);
  EXPECT_EQ(f.hcas[0].firmware, "22.39.1002");
  EXPECT_EQ(f.hcas[0].link_layer, "Ethernet");
  EXPECT_EQ(f.hcas[0].rate, "100 Gb/sec (4X EDR)");
  EXPECT_EQ(f.hcas[0].mtu, "4096");  // its netdev ens1f0np0 has MTU 9000
}

TEST(CollectFabricFactsTest, DegradedPortShowsItsRate) {
  k8s::FabricFacts f = FactsOf("ib-port-down");
  ASSERT_EQ(f.hcas.size(), 4u);
  EXPECT_EQ(f.hcas[3].rate, "200 Gb/sec (2X NDR)");
}

TEST(CollectFabricFactsTest, UnreadableFilesLeaveFactsEmpty) {
  k8s::FabricFacts f = FactsOf("malformed");
  EXPECT_EQ(f.driver, "");  // version is a directory
  ASSERT_EQ(f.hcas.size(), 2u);
  EXPECT_EQ(f.hcas[0].rate, "fast");  // what the file says, unparsed but published as read
  EXPECT_EQ(f.hcas[1].firmware, "28.39.1002");
}

TEST(CollectFabricFactsTest, NoRdmaNoFacts) {
  k8s::FabricFacts f = FactsOf("empty");
  EXPECT_EQ(f.driver, "");
  EXPECT_TRUE(f.hcas.empty());
}

}  // namespace
}  // namespace tocsin::agent
