#include "bench/net_bench.h"

#include <gtest/gtest.h>

#include "bench/results.h"
#include "bench/transport.h"

namespace tocsin::bench {
namespace {

TEST(NetBenchTest, SweepSizes) {
  EXPECT_EQ(SweepSizes(1024, 64 << 20, 4),
            (std::vector<size_t>{1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
                                 67108864}));
  EXPECT_EQ(SweepSizes(8, 8, 2), std::vector<size_t>{8});
}

TEST(NetBenchTest, ValidationNamesTheFlag) {
  NetBenchOptions o;
  o.world.rank = 0;
  o.world.world_size = 1;
  o.world.coordinator = "127.0.0.1:0";
  EXPECT_TRUE(ValidateNetBench(o).ok());
  o.tests = {"broadcast"};
  EXPECT_NE(ValidateNetBench(o).message().find("unknown test"), std::string::npos);
  o.tests = {"p2p"};
  o.max_bytes = 2ull << 30;
  EXPECT_NE(ValidateNetBench(o).message().find("1 GiB"), std::string::npos);
  o.max_bytes = 1 << 20;
  EXPECT_NE(ValidateNetBench(o).message().find("at least 2"), std::string::npos);  // 1 rank
  o.world.world_size = 2;
  o.world.token = "t";
  o.transport = "rdma";
  EXPECT_NE(ValidateNetBench(o).message().find("--transport"), std::string::npos);
}

TEST(NetBenchTest, FindingsComeSorted) {
  NetBenchOptions o;
  o.world.rank = 0;
  o.world.world_size = 1;
  o.world.coordinator = "127.0.0.1:0";
  o.tests = {"allreduce", "allgather"};
  o.min_bytes = o.max_bytes = 4096;
  o.warmup = 0;
  o.iters = 1;
  o.min_busbw = 1e9;  // both fail: net.busbw.low about allreduce, then allgather
  auto r = RunNetBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->findings.size(), 2u);
  EXPECT_EQ(r->findings[0].subject, "allgather");
  EXPECT_EQ(r->findings[1].subject, "allreduce");
}

TEST(NetBenchTest, RdmaProviders) {
  EXPECT_TRUE(IsRdmaProvider("verbs;ofi_rxm"));
  EXPECT_TRUE(IsRdmaProvider("efa"));
  EXPECT_TRUE(IsRdmaProvider("cxi"));
  for (const char* p : {"tcp", "tcp;ofi_rxm", "udp;ofi_rxd", "sockets", "shm", "net"}) {
    EXPECT_FALSE(IsRdmaProvider(p)) << p;
  }
}

BenchOutcome FourNodes(double slow_rank_gbps) {
  BenchOutcome o;
  o.transport.kind = "tcp";
  o.transport.ip = "10.77.0.1";
  for (int r = 0; r < 4; ++r) {
    o.peers.push_back({r, "node", "10.77.0." + std::to_string(r + 1), ""});
  }
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) {
      PairResult p{a, b, 12.0, 1.2, 1.1};
      if (b == 3) p.ba_gbps = slow_rank_gbps;  // rank 3's uplink is shaped
      o.pairs.push_back(p);
    }
  }
  TestResult t{"allreduce", "sum", 1.5, {}};
  t.rows.push_back({1 << 20, 1 << 18, 1000, 1.048576, 1.572864, 0});
  t.rows.push_back({1 << 22, 1 << 20, 4000, 1.048576, 1.572864, 3});
  o.tests.push_back(t);
  return o;
}

TEST(NetBenchTest, SlowLinkOnExactlyTheShapedNodesPairs) {
  Report r;
  FillReport(FourNodes(0.12), 0, 0.5, r);
  std::vector<std::string> slow;
  for (const auto& f : r.findings) {
    if (f.check == "net.link.slow") slow.push_back(f.subject);
  }
  ASSERT_EQ(slow.size(), 3u);
  for (const auto& s : slow) EXPECT_NE(s.find("10.77.0.4"), std::string::npos) << s;
  // Healthy links: no straggler.
  Report healthy;
  FillReport(FourNodes(1.0), 0, 0.5, healthy);
  for (const auto& f : healthy.findings) EXPECT_NE(f.check, "net.link.slow") << f.message;
}

TEST(NetBenchTest, ThresholdsAndWrongData) {
  Report r;
  FillReport(FourNodes(1.0), 2.0, 0.5, r);
  int low = 0, wrong = 0, slow = 0;
  for (const auto& f : r.findings) {
    low += f.check == "net.busbw.low";
    wrong += f.check == "net.wrong";
    slow += f.check == "net.link.slow" && f.severity == Severity::kError;
  }
  EXPECT_EQ(low, 1);
  EXPECT_EQ(wrong, 1);
  EXPECT_EQ(slow, 6);  // every pair is below 2 GB/s
  EXPECT_DOUBLE_EQ(r.inventory["tests"]["allreduce"]["avg_busbw_gbps"], 1.572864);
}

TEST(NetBenchTest, NotRdmaFindingNamesWhatWasFound) {
  TransportInfo info;
  info.kind = "fabric";
  info.provider = "tcp;ofi_rxm";
  info.domain = "eth0";
  info.interface = "eth0";
  info.ip = "10.77.0.1";
  Finding f = NotRdmaFinding(info, "rank 0");
  EXPECT_EQ(f.check, "net.transport.not-rdma");
  EXPECT_NE(f.message.find("libfabric tcp;ofi_rxm"), std::string::npos) << f.message;
}

}  // namespace
}  // namespace tocsin::bench
