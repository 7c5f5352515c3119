#include "bench/storage_results.h"

#include <gtest/gtest.h>

#include <set>

namespace tocsin::bench {
namespace {

PhaseResult Phase(const std::string& name, uint64_t bytes, double seconds, double p99_us = 0) {
  PhaseResult p;
  p.name = name;
  p.bytes = bytes;
  p.ops = bytes / 4096;
  p.seconds = seconds;
  p.latency.p99 = p99_us;
  return p;
}

std::vector<PhaseResult> Node(double write_s, double read_s) {
  return {Phase("write", 1'000'000'000, write_s), Phase("read", 1'000'000'000, read_s),
          Phase("fsync", 4096, 1, 2500)};
}

std::vector<ranks::Peer> Peers(int n) {
  std::vector<ranks::Peer> peers;
  for (int r = 0; r < n; ++r) {
    peers.push_back(
        {r, "node-" + std::to_string(r), "10.0.0." + std::to_string(r + 1), "", "", false});
  }
  return peers;
}

TEST(StorageResultsTest, PhaseCellsShowThroughputOnlyForDataPhases) {
  auto cells = PhaseCells(Phase("write", 2'000'000'000, 1));
  ASSERT_EQ(cells.size(), PhaseColumns().size());
  EXPECT_EQ(cells[1], "2.00");
  EXPECT_EQ(cells.back(), "-");  // not checked
  EXPECT_EQ(PhaseCells(Phase("meta-create", 0, 1))[1], "-");
}

TEST(StorageResultsTest, ThresholdsAndWrongBlocks) {
  StorageBenchOptions o;
  o.min_write_gbps = 2;
  o.max_fsync_p99_ms = 1;
  o.max_meta_p99_ms = 1;
  std::vector<PhaseResult> phases = Node(1, 1);
  phases[1].wrong = 3;
  phases.push_back(Phase("meta-stat", 0, 1, 1500));
  Report r;
  AddThresholdFindings(o, phases, "/mnt/lustre", r);
  std::multiset<std::string> checks;
  for (const auto& f : r.findings)
    checks.insert(f.check + " " + f.evidence["phase"].get<std::string>());
  EXPECT_EQ(checks, (std::multiset<std::string>{
                        "storage.throughput.low write", "storage.data.wrong read",
                        "storage.latency.high fsync", "storage.latency.high meta"}));
}

TEST(StorageResultsTest, AggregateIsAllBytesOverTheSlowestNode) {
  auto agg = AggregatePhases({Node(1, 2), Node(4, 1)});
  ASSERT_EQ(agg.size(), 3u);
  EXPECT_EQ(agg[0].name, "write");
  EXPECT_EQ(agg[0].bytes, 2'000'000'000u);
  EXPECT_DOUBLE_EQ(agg[0].seconds, 4);
  EXPECT_DOUBLE_EQ(agg[1].seconds, 2);
  EXPECT_TRUE(AggregatePhases({}).empty());
}

TEST(StorageResultsTest, ASlowNodeIsAStragglerOnlyAmongThreeOrMore) {
  Report r;
  AddAllNodesResults(Peers(4), {Node(1, 1), Node(1, 1), Node(1, 4), Node(1, 1)}, 0.5, r);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].check, "storage.node.slow");
  EXPECT_EQ(r.findings[0].subject, Peers(4)[2].Name());
  EXPECT_EQ(r.findings[0].evidence["phase"], "read");
  EXPECT_EQ(r.inventory["nodes"].size(), 4u);
  EXPECT_EQ(r.inventory["aggregate"][0]["phase"], "write");
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].title, "NODES");
  EXPECT_EQ(r.tables[0].rows[2][4], "2500");  // fsync p99
  Report two;
  AddAllNodesResults(Peers(2), {Node(1, 1), Node(1, 4)}, 0.5, two);
  EXPECT_TRUE(two.findings.empty());
}

TEST(StorageResultsTest, NodeResultsReplaceTheInventory) {
  StorageBenchOptions o;
  o.path = "/mnt/lustre";
  FsInfo fs;
  fs.type = "lustre";
  fs.magic = 0x0BD00BD0;
  Report r;
  r.inventory["stale"] = true;
  AddNodeResults(o, o.probe, fs, Node(1, 1), r);
  EXPECT_FALSE(r.inventory.contains("stale"));
  EXPECT_EQ(r.inventory["filesystem"]["magic"], "0xbd00bd0");
  EXPECT_EQ(r.inventory["phases"].size(), 3u);
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].title, "FILESYSTEM");
  EXPECT_EQ(r.tables[1].title, "PHASES (this node)");
}

}  // namespace
}  // namespace tocsin::bench
