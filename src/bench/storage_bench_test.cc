#include "bench/storage_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bench/latency.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::bench {
namespace {

namespace fs = std::filesystem;

TEST(LatencyTest, NearestRankPercentiles) {
  std::vector<int64_t> ns;
  for (int i = 1000; i >= 1; --i) ns.push_back(i * 1000);  // 1..1000 us, unsorted
  Percentiles p = ComputePercentiles(ns);
  EXPECT_EQ(p.count, 1000u);
  EXPECT_DOUBLE_EQ(p.p50, 500);
  EXPECT_DOUBLE_EQ(p.p90, 900);
  EXPECT_DOUBLE_EQ(p.p99, 990);
  EXPECT_DOUBLE_EQ(p.p999, 999);
  EXPECT_DOUBLE_EQ(p.max, 1000);
  EXPECT_DOUBLE_EQ(p.mean, 500.5);
  std::vector<int64_t> none;
  EXPECT_EQ(ComputePercentiles(none).count, 0u);
}

class ProbeTest : public ::testing::Test {
 protected:
  StorageBenchOptions Small() {
    StorageBenchOptions o;
    o.path = dir_;
    o.probe.jobs = 2;
    o.probe.size = 1 << 20;
    o.probe.block = 64 << 10;
    o.probe.files = 20;
    o.probe.fsync_ops = 5;
    o.probe.randread_ops = 50;
    return o;
  }
  ::tocsin::testing::ScopedTempDir tmp_{"probe-test"};
  const std::string& dir_ = tmp_.path();
};

TEST_F(ProbeTest, EveryPhaseRunsVerifiesAndCleansUp) {
  for (bool shared : {false, true}) {
    StorageBenchOptions o = Small();
    o.probe.shared_file = shared;
    auto r = RunStorageBench(o);
    ASSERT_OK(r);
    EXPECT_FALSE(r->hung);
    EXPECT_TRUE(r->report.findings.empty());
    const auto& phases = r->report.inventory["phases"];
    ASSERT_EQ(phases.size(), 7u);
    EXPECT_EQ(phases[0]["phase"], "write");
    EXPECT_EQ(phases[0]["bytes"], 2 << 20);
    EXPECT_EQ(phases[1]["phase"], "read");
    EXPECT_EQ(phases[1]["wrong"], 0);
    EXPECT_EQ(phases[2]["ops"], 100);
    EXPECT_EQ(phases[3]["ops"], 10);
    EXPECT_EQ(phases[4]["phase"], "meta-create");
    EXPECT_EQ(phases[4]["ops"], 40);
    EXPECT_GT(phases[4]["latency"]["p50_us"].get<double>(), 0);
    EXPECT_TRUE(fs::is_empty(dir_)) << "the probe must remove what it created";
  }
}

TEST_F(ProbeTest, ThresholdsBecomeFindings) {
  StorageBenchOptions o = Small();
  o.phases = {"write", "read", "fsync"};
  o.min_read_gbps = 1e6;
  o.max_fsync_p99_ms = 1e-6;
  auto r = RunStorageBench(o);
  ASSERT_TRUE(r.ok());
  std::set<std::string> checks;
  for (const auto& f : r->report.findings) checks.insert(f.check);
  EXPECT_TRUE(checks.count("storage.throughput.low"));
  EXPECT_TRUE(checks.count("storage.latency.high"));
  std::vector<Finding> sorted = r->report.findings;
  SortFindings(sorted);
  ASSERT_EQ(sorted.size(), r->report.findings.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    EXPECT_EQ(r->report.findings[i].check, sorted[i].check) << i;
    EXPECT_EQ(r->report.findings[i].message, sorted[i].message) << i;
  }
}

TEST_F(ProbeTest, RefusesWhatItShouldNotTouch) {
  StorageBenchOptions o = Small();
  std::string file = dir_ + "/not-a-dir";
  std::ofstream(file) << "x";
  o.path = file;
  auto r = RunStorageBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos);
  o.path = dir_ + "/missing";
  EXPECT_FALSE(RunStorageBench(o).ok());
  o = Small();
  o.phases = {"read"};
  EXPECT_NE(ValidateStorageBench(o).message().find("need the write phase"), std::string::npos);
  o = Small();
  o.probe.size = 1000;
  EXPECT_FALSE(ValidateStorageBench(o).ok());
  EXPECT_EQ(fs::exists(file), true);  // untouched
}

}  // namespace
}  // namespace tocsin::bench
