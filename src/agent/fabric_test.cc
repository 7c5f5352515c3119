#include "agent/fabric.h"

#include <gtest/gtest.h>

namespace tocsin::agent {
namespace {

using std::chrono::seconds;

FabricSample Sample(int t, uint64_t rdma, uint64_t eth, int ports = 4) {
  FabricSample s;
  s.at = std::chrono::steady_clock::time_point(seconds(t));
  s.wall = FromUnixSeconds(1764460000 + t);
  s.active_rdma_ports = ports;
  s.rdma_bytes = rdma;
  s.ethernet_bytes = eth;
  return s;
}

TEST(FabricWatchTest, IdleRdmaWithBusyEthernetForTheSustainWindowIsAFinding) {
  FabricWatch w({1e6, 100e6, seconds(30)});
  EXPECT_FALSE(w.Add(Sample(0, 1000, 0)).rdma_bps);  // one sample: no rate yet
  auto v = w.Add(Sample(10, 1000, 2'000'000'000));   // 200 MB/s Ethernet, RDMA flat
  EXPECT_EQ(*v.rdma_bps, 0);
  EXPECT_EQ(*v.ethernet_bps, 200e6);
  EXPECT_FALSE(v.finding);  // 10 s < 30 s
  EXPECT_FALSE(w.Add(Sample(20, 1000, 4'000'000'000)).finding);
  v = w.Add(Sample(30, 1000, 6'000'000'000));
  ASSERT_TRUE(v.finding);
  EXPECT_EQ(v.finding->check, "node.fabric.idle-while-tcp-busy");
  EXPECT_EQ(v.finding->severity, Severity::kError);
  EXPECT_EQ(v.finding->since, FromUnixSeconds(1764460000));  // the first idle-while-busy interval
  EXPECT_EQ(v.finding->evidence["ethernet_bytes_per_second"], 200e6);
}

TEST(FabricWatchTest, RdmaTrafficOrQuietEthernetClearsIt) {
  FabricWatch w({1e6, 100e6, seconds(10)});
  w.Add(Sample(0, 0, 0));
  EXPECT_TRUE(w.Add(Sample(10, 0, 2'000'000'000)).finding);
  // RDMA carries 10 GB/s: the job uses the fabric.
  EXPECT_FALSE(w.Add(Sample(20, 100'000'000'000, 4'000'000'000)).finding);
  // Idle again, but the window starts over.
  EXPECT_FALSE(w.Add(Sample(25, 100'000'000'000, 5'000'000'000)).finding);
  EXPECT_TRUE(w.Add(Sample(35, 100'000'000'000, 7'000'000'000)).finding);
  // Ethernet quiet: nothing to fall back to.
  EXPECT_FALSE(w.Add(Sample(45, 100'000'000'000, 7'000'000'100)).finding);
}

TEST(FabricWatchTest, NoActivePortsOrACounterResetIsNoFinding) {
  FabricWatch w({1e6, 100e6, seconds(0)});
  w.Add(Sample(0, 0, 0, 0));
  EXPECT_FALSE(w.Add(Sample(10, 0, 2'000'000'000, 0)).finding);  // no fabric to fall back from
  auto v = w.Add(Sample(20, 0, 5, 4));                           // Ethernet counter went back
  EXPECT_FALSE(v.ethernet_bps);
  EXPECT_FALSE(v.finding);
}

}  // namespace
}  // namespace tocsin::agent
