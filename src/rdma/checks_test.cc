#include "rdma/checks.h"

#include <gtest/gtest.h>

namespace tocsin::rdma {
namespace {

Port ActivePort(double gbps, int width, int phys = kPhysLinkUp) {
  Port p;
  p.number = 1;
  p.state = CodedState{kPortActive, "ACTIVE"};
  p.phys_state = CodedState{phys, phys == kPhysLinkUp ? "LinkUp" : "PortConfigurationTraining"};
  p.rate = LinkRate{gbps, width, "NDR"};
  p.link_layer = "InfiniBand";
  return p;
}

// Four CX-7 NDR HCAs; mlx5_3 trained at 2X (200 Gb/s, half its lanes lost).
Scan NdrNodeWithOneHalfPort() {
  Scan scan;
  scan.present = true;
  for (int i = 0; i < 4; ++i) {
    Device d;
    d.name = "mlx5_" + std::to_string(i);
    d.hca_type = "MT4129";
    d.ports.push_back(i == 3 ? ActivePort(200, 2) : ActivePort(400, 4));
    scan.devices.push_back(std::move(d));
  }
  return scan;
}

std::vector<Finding> RateFindings(const Scan& scan, const Expectations& expect) {
  std::vector<Finding> all, rate;
  CheckScan(scan, expect, all);
  for (auto& f : all) {
    if (f.check == "rdma.port.rate") rate.push_back(std::move(f));
  }
  return rate;
}

TEST(RdmaChecksTest, AnUnparsableRateIsUnknownWithoutAnExpectation) {
  Scan scan = NdrNodeWithOneHalfPort();
  Port& p = scan.devices[0].ports[0];
  p.rate.reset();
  p.issues.push_back({"rate", "/sys/class/infiniband/mlx5_0/ports/1/rate",
                      Status::ParseError("\"fast\": not a rate")});
  auto rate = RateFindings(scan, {});
  ASSERT_EQ(rate.size(), 2u);  // the unknown one, and the degraded mlx5_3 still
  EXPECT_EQ(rate[0].subject, "mlx5_0/1");
  EXPECT_EQ(rate[0].evidence["result"], "unknown");
}

TEST(RdmaChecksTest, PeerComparisonWithoutExpectation) {
  auto rate = RateFindings(NdrNodeWithOneHalfPort(), {});
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0].subject, "mlx5_3/1");
  EXPECT_EQ(rate[0].severity, Severity::kWarning);
  EXPECT_EQ(rate[0].evidence["peer_rate_gbps"], 400);
}

// A floor the degraded port meets must not hide that it lost half its lanes.
TEST(RdmaChecksTest, MetExpectationDoesNotHideADegradedPort) {
  Expectations expect;
  expect.min_rate_gbps = 200;
  auto rate = RateFindings(NdrNodeWithOneHalfPort(), expect);
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0].subject, "mlx5_3/1");
  EXPECT_EQ(rate[0].severity, Severity::kWarning);
  EXPECT_EQ(rate[0].evidence["peer_rate_gbps"], 400);
  EXPECT_EQ(rate[0].evidence["expected_min_gbps"], 200);
  EXPECT_NE(rate[0].message.find("other MT4129 ports run at 400 Gb/s"), std::string::npos)
      << rate[0].message;
  EXPECT_NE(rate[0].message.find("--expect-rate 200 is met"), std::string::npos) << rate[0].message;
}

// Below the floor and below its peers: one error that states both facts.
TEST(RdmaChecksTest, FloorAndPeersAreBothReported) {
  Expectations expect;
  expect.min_rate_gbps = 400;
  auto rate = RateFindings(NdrNodeWithOneHalfPort(), expect);
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0].severity, Severity::kError);
  EXPECT_EQ(rate[0].evidence["expected_min_gbps"], 400);
  EXPECT_EQ(rate[0].evidence["peer_rate_gbps"], 400);
  EXPECT_NE(rate[0].message.find("expected at least 400 Gb/s"), std::string::npos);
  EXPECT_NE(rate[0].message.find("degraded link"), std::string::npos);

  // Every port below the floor, none below its peers: the floor alone.
  expect.min_rate_gbps = 800;
  rate = RateFindings(NdrNodeWithOneHalfPort(), expect);
  ASSERT_EQ(rate.size(), 4u);
  EXPECT_FALSE(rate[0].evidence.contains("peer_rate_gbps"));
  EXPECT_EQ(rate[0].message, "link runs at 400 Gb/s (4X NDR), expected at least 800 Gb/s");
}

TEST(RdmaChecksTest, DownReasonNamesAPhysicalStateOnlyFault) {
  Scan scan = NdrNodeWithOneHalfPort();
  scan.devices[0].ports[0] = ActivePort(400, 4, 4);  // ACTIVE, PortConfigurationTraining
  std::vector<Finding> all;
  CheckScan(scan, {}, all);
  const Finding* down = nullptr;
  for (const auto& f : all) {
    if (f.check == "rdma.port.down") down = &f;
  }
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->subject, "mlx5_0/1");
  EXPECT_EQ(down->message.find("the port is not active"), std::string::npos) << down->message;
  EXPECT_NE(down->message.find("physical link is not up (PortConfigurationTraining)"),
            std::string::npos)
      << down->message;
}

}  // namespace
}  // namespace tocsin::rdma
