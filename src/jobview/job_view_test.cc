#include "jobview/job_view.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "jobview/catalog.h"
#include "jobview/job_queries.h"
#include "jobview/fake_prometheus_test.h"
#include "jobview/prometheus.h"
#include "testing/status_matchers.h"

namespace tocsin::jobview {
namespace {

using namespace ::tocsin::jobview::fake;  // NOLINT: the fake Prometheus and its helpers

NodePoints FourNodes(double v) {
  NodePoints out;
  for (int i = 1; i <= 4; ++i) out["node-" + std::to_string(i)] = Flat(v);
  return out;
}

TEST(JobViewTest, NoPodInfoIsNotFoundNamingTheJob) {
  FakePrometheus prom;
  auto view = QueryJob(prom.fetch(), prom.options);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), StatusCode::kNotFound);
  EXPECT_NE(view.status().message().find("job_name=\"llm\""), std::string::npos);
  EXPECT_EQ(prom.asked.size(), 2u);  // the two grids: nothing more of a job that is not there
}

// The queries of a job read from the rules' expressions: grids, columns, transports, verdicts.
constexpr size_t kExpressionQueries = 2 + 6 + 1 + 3;

TEST(JobViewTest, NodesSideBySideAndTheFallbackVerdictWithItsOnset) {
  FakePrometheus prom;
  prom.answers[kInfo] = FourNodes(1);
  prom.answers[kGpuUtilization] = FourNodes(0.9);
  NodePoints rdma = FourNodes(1.2e10);
  rdma["node-2"] = Flat(0);
  prom.answers[kRdmaRate] = rdma;
  prom.answers[kEthernetRate] = FourNodes(2e7);
  prom.transports = {{"node-2", "Socket"}};
  prom.answers[kFabricFallback] = {{"node-2", Flat(1, kEnd - 1200)}};
  // A storage blip on node-3 shorter than the alert's `for` (2 minutes): no verdict.
  prom.answers[kStorageStall] = {{"node-3", Flat(1, kEnd - 1800, kEnd - 1800 + 90)}};
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_EQ(view.step, 15);
  EXPECT_FALSE(view.recorded);
  EXPECT_EQ(view.queries, kExpressionQueries + 6);  // + the episode's evidence
  ASSERT_EQ(view.nodes.size(), 4u);
  EXPECT_EQ(view.nodes.at("node-2").transports.at("Socket"), 1u);
  EXPECT_TRUE(view.nodes.at("node-2").series.empty());  // no --plot: no series asked
  ASSERT_EQ(view.episodes.size(), 1u);
  EXPECT_EQ(view.episodes[0].node, "node-2");
  EXPECT_TRUE(view.episodes[0].ongoing);

  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_EQ(report.findings.size(), 1u);
  const Finding& f = report.findings[0];
  EXPECT_EQ(f.check, kFabricFallback);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.subject, "node-2");
  EXPECT_EQ(f.since, FromUnixSeconds(static_cast<int64_t>(kEnd - 1200)));
  EXPECT_EQ(f.evidence["alert"], "TocsinJobFabricFallback");
  EXPECT_EQ(f.evidence["series"][kRdmaRate], 0.0);
  EXPECT_EQ(f.evidence["series_over"], "episode");
  EXPECT_EQ(f.evidence["ongoing"], true);
  ASSERT_EQ(report.tables.size(), 1u);
  const Table& t = report.tables[0];
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"node-2", "90%", "0.0 MB/s", "20.0 MB/s", "-", "-",
                                                 "Socket x1", kFabricFallback}));
  EXPECT_EQ(t.rows[0][2], "12.0 GB/s");
  EXPECT_EQ(t.rows[0][7], "-");
  EXPECT_EQ(report.inventory["nodes"]["node-2"]["nccl_transports"]["Socket"], 1);
}

// The queries go out several at once; the view is the same as one at a time.
TEST(JobViewTest, ParallelQueriesGiveTheSameViewAsOneAtATime) {
  FakePrometheus prom;
  prom.answers[kInfo] = FourNodes(1);
  prom.answers[kGpuUtilization] = FourNodes(0.9);
  prom.answers[kRdmaRate] = FourNodes(1.2e10);
  prom.answers[kEthernetRate] = FourNodes(2e7);
  prom.answers[kFabricFallback] = {{"node-2", Flat(1, kEnd - 1200)}};
  prom.answers[kStorageStall] = {{"node-3", Flat(1, kEnd - 1800)}};
  prom.options.parallel = 1;
  ASSERT_OK_AND_ASSIGN(JobView one, QueryJob(prom.fetch(), prom.options));
  std::vector<std::string> asked_one = prom.asked;
  prom.asked.clear();
  prom.options.parallel = 8;
  ASSERT_OK_AND_ASSIGN(JobView many, QueryJob(prom.fetch(), prom.options));
  for (const auto* asked : {&asked_one, &prom.asked}) {  // the grids first, alone
    ASSERT_GE(asked->size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_NE((*asked)[i].find("_over_time"), std::string::npos);
  }
  std::sort(asked_one.begin(), asked_one.end());
  std::sort(prom.asked.begin(), prom.asked.end());
  EXPECT_EQ(asked_one, prom.asked);
  EXPECT_EQ(one.queries, many.queries);
  ASSERT_EQ(one.episodes.size(), 2u);
  ASSERT_EQ(many.episodes.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(one.episodes[i].node, many.episodes[i].node);
    EXPECT_EQ(one.episodes[i].verdict, many.episodes[i].verdict);
    EXPECT_EQ(one.episodes[i].start, many.episodes[i].start);
    EXPECT_EQ(one.episodes[i].values.gpu, many.episodes[i].values.gpu);
  }
  ASSERT_EQ(one.nodes.size(), many.nodes.size());
  for (const auto& [node, nv] : one.nodes) EXPECT_EQ(nv.window.rdma, many.nodes.at(node).window.rdma);
}

// The recorded series of four healthy nodes, node-3 stalled on storage from half an hour ago.
void Recorded(FakePrometheus& prom) {
  prom.answers[kInfo] = FourNodes(1);
  prom.recorded[kGpuUtilization] = FourNodes(0.9);
  prom.recorded[kRdmaRate] = FourNodes(1.2e10);
  prom.recorded[kEthernetRate] = FourNodes(2e7);
  NodePoints bits = FourNodes(0);
  bits["node-3"] = Flat(0, kEnd - 3600, kEnd - 1815);
  for (const Point& p : Flat(2, kEnd - 1800)) bits["node-3"].push_back(p);
  prom.recorded[kVerdictBitmask] = bits;
}

// Prometheus recorded the rules over the whole window: their series are read, not re-evaluated.
TEST(JobViewTest, RecordedSeriesAreReadWhenTheyCoverEveryNodeOverTheWindow) {
  FakePrometheus prom;
  Recorded(prom);
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.recorded);
  // grids, columns, transports, the bitmask of node-3, the evidence
  EXPECT_EQ(view.queries, 2 + 6 + 1 + 1 + 6);
  for (size_t i = 2; i < prom.asked.size(); ++i) {
    EXPECT_EQ(prom.asked[i].find("tocsin_pod_info"), std::string::npos) << prom.asked[i];
  }
  // Only the node with a verdict is asked over the window at the step.
  size_t ranges = 0;
  for (const auto& path : prom.asked) {
    std::string query = FakePrometheus::Params(path)["query"];
    if (path.starts_with("/api/v1/query_range") && query.find("_over_time") == std::string::npos) {
      ++ranges;
      EXPECT_NE(query.find("node=~\"node-3\""), std::string::npos) << query;
    }
  }
  EXPECT_EQ(ranges, 1u);
  ASSERT_EQ(view.episodes.size(), 1u);
  EXPECT_EQ(view.episodes[0].node, "node-3");
  EXPECT_EQ(view.episodes[0].verdict->check, std::string(kStorageStall));
  EXPECT_EQ(view.episodes[0].start, kEnd - 1800);
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  EXPECT_EQ(report.inventory["source"], "recorded");

  // The GPU record failing on one node for a while (a GPU shared by two jobs makes its join
  // many-to-many), which the bitmask says with its 8: the records are still read, and the node
  // is job.data.missing from then on, not silently without verdicts.
  prom.asked.clear();
  prom.recorded[kVerdictBitmask]["node-2"] = Flat(0);
  prom.recorded[kVerdictBitmask]["node-2"][100].v = kInputsMissingBit;
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.recorded);
  ASSERT_TRUE(view.nodes.at("node-2").inputs_missing_since.has_value());
  EXPECT_EQ(*view.nodes.at("node-2").inputs_missing_since, kEnd - 3600 + 15 * 100);
  EXPECT_EQ(view.nodes.at("node-2").inputs_missing_steps, 1u);
  report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_EQ(report.findings.size(), 2u);  // the stall on node-3, and this
  const Finding& missing = report.findings[0].check == kDataMissing ? report.findings[0]
                                                                     : report.findings[1];
  EXPECT_EQ(missing.check, kDataMissing);
  EXPECT_EQ(missing.subject, "node-2");
  EXPECT_EQ(missing.since, FromUnixSeconds(static_cast<int64_t>(kEnd - 3600 + 15 * 100)));
  prom.recorded[kVerdictBitmask]["node-2"] = Flat(0);

  // One node's records begin halfway (the rules deployed then): the expressions instead.
  prom.asked.clear();
  prom.recorded[kVerdictBitmask]["node-4"] = Flat(0, kEnd - 1800);
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  EXPECT_TRUE(view.episodes.empty());  // the stall was only in the (unread) records
  EXPECT_NE(prom.asked.back().find("tocsin_pod_info"), std::string::npos);
  report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  EXPECT_EQ(report.inventory["source"], "expressions");

  // Rules of a release without the bitmask: never read as "no verdict".
  prom.recorded.erase(kVerdictBitmask);
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);

  // Forced either way.
  Recorded(prom);
  prom.options.source = JobOptions::Source::kExpressions;
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  prom.options.source = JobOptions::Source::kRecords;
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.recorded);
}

// A healthy job read from its records: no range query but the grids, whatever its size.
TEST(JobViewTest, AHealthyRecordedJobAsksNoSeriesOverTheWindow) {
  FakePrometheus prom;
  Recorded(prom);
  prom.recorded[kVerdictBitmask] = FourNodes(0);
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.recorded);
  EXPECT_TRUE(view.episodes.empty());
  EXPECT_EQ(view.queries, 2 + 6 + 1);
  size_t ranges = 0;
  for (const auto& path : prom.asked) ranges += path.starts_with("/api/v1/query_range");
  EXPECT_EQ(ranges, 2u);
  EXPECT_NEAR(view.nodes.at("node-1").window.gpu, 0.9, 1e-9);

  // --plot: the series too.
  prom.options.series = true;
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_EQ(view.nodes.at("node-1").series.at(kRdmaRate).size(), Flat(0).size());
}

// A straggler's evidence: its rate and its peers' median over its episode, not the window's.
TEST(JobViewTest, AStragglersEvidenceIsItsEpisodeBesideItsPeers) {
  FakePrometheus prom;
  Recorded(prom);
  NodePoints rdma = FourNodes(1e10);
  rdma["node-4"] = Flat(1e10, kEnd - 3600, kEnd - 615);
  for (const Point& p : Flat(1e9, kEnd - 600)) rdma["node-4"].push_back(p);
  prom.recorded[kRdmaRate] = rdma;
  NodePoints bits = FourNodes(0);
  bits["node-4"] = Flat(0, kEnd - 3600, kEnd - 615);
  for (const Point& p : Flat(4, kEnd - 600)) bits["node-4"].push_back(p);
  prom.recorded[kVerdictBitmask] = bits;
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  ASSERT_EQ(view.episodes.size(), 1u);
  const Episode& e = view.episodes[0];
  EXPECT_EQ(e.verdict->check, std::string(kNetworkStraggler));
  EXPECT_DOUBLE_EQ(e.values.rdma, 1e9);
  EXPECT_DOUBLE_EQ(e.peers_median, 1e10 + 2e7);
  EXPECT_GT(view.nodes.at("node-4").window.rdma, 5e9);  // the window's mean hides it
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].evidence["peers_median_bytes_per_second"], 1e10 + 2e7);
}

// The three series every node needs, for all four nodes.
void AllInputs(FakePrometheus& prom) {
  prom.answers[kGpuUtilization] = FourNodes(0.9);
  prom.answers[kRdmaRate] = FourNodes(1.2e10);
  prom.answers[kEthernetRate] = FourNodes(2e7);
}

TEST(JobViewTest, APastEpisodeSaysWhenItEnded) {
  FakePrometheus prom;
  prom.answers[kInfo] = FourNodes(1);
  AllInputs(prom);
  prom.answers[kStorageStall] = {{"node-1", Flat(1, kEnd - 1800, kEnd - 900)}};
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].check, kStorageStall);
  EXPECT_EQ(report.findings[0].evidence["ongoing"], false);
  EXPECT_EQ(report.findings[0].evidence["until"],
            FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(kEnd - 900))));
  EXPECT_NE(report.findings[0].message.find("over since"), std::string::npos);
}

// More distinct runs than are asked about one by one: the rest carry the window's values.
TEST(JobViewTest, ManyDistinctEpisodesFallBackToTheWindowsValues) {
  FakePrometheus prom;
  NodePoints info;
  for (size_t i = 0; i < kMaxEpisodeWindows + 2; ++i) {
    std::string node = fmt::format("node-{:02}", i);
    info[node] = Flat(1);
    prom.answers[kStorageStall][node] = Flat(1, kEnd - 1800 + 15 * static_cast<double>(i));
  }
  prom.answers[kInfo] = info;
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  ASSERT_EQ(view.episodes.size(), kMaxEpisodeWindows + 2);
  size_t over_window = 0;
  for (const Episode& e : view.episodes) over_window += e.over_window;
  EXPECT_EQ(over_window, 2u);
  EXPECT_EQ(view.queries, kExpressionQueries + 6 * kMaxEpisodeWindows);
}

// A node whose agent (or fabric task) is down has no series: no verdict can be judged there,
// and the report says so instead of reading as healthy.
TEST(JobViewTest, ANodeWithoutItsSeriesIsAFindingNotSilence) {
  FakePrometheus prom;
  prom.answers[kInfo] = FourNodes(1);
  AllInputs(prom);
  prom.answers[kRdmaRate].erase("node-3");
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].check, kDataMissing);
  EXPECT_EQ(report.findings[0].subject, "node-3");
  EXPECT_EQ(report.findings[0].evidence["missing"], nlohmann::json::array({kRdmaRate}));
}

// Timestamps outside the window (a broken or hostile server) are dropped and counted: no
// episode, onset or time conversion sees them.
TEST(JobViewTest, PointsOutsideTheWindowAreDropped) {
  FakePrometheus prom;
  prom.answers[kInfo] = FourNodes(1);
  AllInputs(prom);
  prom.answers[kFabricFallback] = {{"node-2", {{1e300, 1}, {1e300 + 1e285, 1}, {-1e300, 1}}}};
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.episodes.empty());
  EXPECT_GE(view.drops.points, 2u);
}

// A hostile bitmask (huge, negative, a fraction) is no value the rule writes: neither a verdict
// nor coverage, so the expressions are read.
TEST(JobViewTest, ABitmaskOutOfRangeIsNotCoverage) {
  for (double bad : {1e300, -1.0, 0.5, 16.0}) {
    FakePrometheus prom;
    Recorded(prom);
    prom.recorded[kVerdictBitmask]["node-2"] = Flat(bad);
    ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
    EXPECT_FALSE(view.recorded) << bad;
    EXPECT_TRUE(view.episodes.empty()) << bad;
  }
}

// Rules without the bitmask over a long window, for a job that ran a few cells only: no node
// without bitmask cells of its own is covered, however short its run.
TEST(JobViewTest, ANodeWithoutBitmaskCellsIsNeverCovered) {
  FakePrometheus prom;
  prom.options.since = std::chrono::hours(24);  // cells of 360 s
  Recorded(prom);
  prom.answers[kInfo] = {{"node-1", Flat(1, kEnd - 900)}};  // 15 minutes: 3 cells
  prom.recorded.erase(kVerdictBitmask);
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  // The bitmask there for one node but not the other.
  Recorded(prom);
  prom.recorded[kVerdictBitmask].erase("node-4");
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  // A gap in the middle of a run (a rule that failed for half an hour) is not covered either.
  Recorded(prom);
  prom.options.since = std::chrono::hours(1);
  auto& bits = prom.recorded[kVerdictBitmask]["node-1"];
  std::erase_if(bits, [](const Point& p) { return p.t > kEnd - 2400 && p.t < kEnd - 600; });
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
}

TEST(JobViewTest, SeriesOfOtherNodesOrWithoutANodeAreDroppedAndCounted) {
  FakePrometheus prom;
  prom.answers[kInfo] = {{"node-1", Flat(1)}};
  prom.answers[kRdmaRate] = {{"node-1", Flat(1)}, {"node-9", Flat(1)}};
  prom.raw[kNetworkStraggler] = R"({"status":"success","data":{"resultType":"matrix",)"
                                R"("result":[{"metric":{},"values":[[1,"1"]]}]}})";
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.drops.series, 2u);
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_FALSE(report.tables[0].notes.empty());
  EXPECT_NE(report.tables[0].notes.back().find("2 series"), std::string::npos);
}

TEST(JobViewTest, AFailedQueryNamesItsRecord) {
  FakePrometheus prom;
  prom.answers[kInfo] = FourNodes(1);
  prom.raw[kLustreWait] = R"({"status":"error","errorType":"timeout","error":"query timed out"})";
  auto view = QueryJob(prom.fetch(), prom.options);
  ASSERT_FALSE(view.ok());
  EXPECT_NE(view.status().message().find(kLustreWait), std::string::npos);
  EXPECT_NE(view.status().message().find("query timed out"), std::string::npos);

  Fetch down = [](const std::string&) -> Result<std::string> {
    return Status::Unavailable("GET http://prom:9090/api/v1/query_range: connection refused");
  };
  auto none = QueryJob(down, prom.options);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);

  Fetch throws = [](const std::string&) -> Result<std::string> { throw std::bad_alloc(); };
  auto thrown = QueryJob(throws, prom.options);
  ASSERT_FALSE(thrown.ok());
  EXPECT_EQ(thrown.status().code(), StatusCode::kInternal);
}

TEST(JobViewTest, TheStepAndTheGridGrowWithTheWindow) {
  FakePrometheus prom;
  prom.options.since = std::chrono::hours(24);
  prom.answers[kInfo] = FourNodes(1);
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_EQ(view.step, 120);
  EXPECT_EQ(GridSeconds(86400, 120), 360);
  EXPECT_EQ(GridSeconds(3600, 15), 15);
  EXPECT_TRUE(prom.asked.front().ends_with("&step=360")) << prom.asked.front();
  EXPECT_NE(prom.asked.front().find(fmt::format("&start={:.0f}&end={:.0f}", kEnd - 86400, kEnd)),
            std::string::npos);
}

TEST(JobViewTest, NodeRegexEscapesDotsAndOnlySafeNamesGoIn) {
  EXPECT_EQ(NodeRegex({"gpu.a-1", "b_2"}), "gpu\\\\.a-1|b_2");
  EXPECT_TRUE(SafeNodeName("gpu-node-01.example"));
  for (const char* bad : {"", "a\"b", "a|b", "a\nb", "a)b"}) EXPECT_FALSE(SafeNodeName(bad)) << bad;
  EXPECT_FALSE(SafeNodeName(std::string(254, 'a')));
}

}  // namespace
}  // namespace tocsin::jobview

namespace tocsin::jobview {
namespace {

// Credentials in --prometheus would be printed in the report's host and in every error.
TEST(PrometheusFetchTest, RefusesCredentialsInTheUrl) {
  PrometheusOptions o;
  o.url = "https://admin:s3cret@prometheus.example:9090";
  auto f = PrometheusFetch(o);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message().find("s3cret"), std::string::npos);
  EXPECT_NE(f.status().message().find("--bearer-token-file"), std::string::npos);
  o.url = "http://prometheus.example:9090/prefix@v2";  // an '@' in the path is fine
  EXPECT_TRUE(PrometheusFetch(o).ok());
}

}  // namespace
}  // namespace tocsin::jobview
