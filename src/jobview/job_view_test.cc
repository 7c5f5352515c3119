#include "jobview/job_view.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "jobview/catalog.h"
#include "jobview/prometheus.h"
#include "testing/status_matchers.h"

namespace tocsin::jobview {
namespace {

constexpr double kEnd = 1700003600;  // the window: the hour before
using NodePoints = std::map<std::string, std::vector<Point>>;

std::string Matrix(const NodePoints& nodes, const std::string& extra_label = "") {
  std::string out = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  bool first = true;
  for (const auto& [node, points] : nodes) {
    out += first ? "" : ",";
    first = false;
    out +=
        fmt::format(R"({{"metric":{{"namespace":"ml","job_name":"llm","node":"{}"{}}},"values":[)",
                    node, extra_label);
    for (size_t i = 0; i < points.size(); ++i) {
      out += fmt::format("{}[{},\"{}\"]", i ? "," : "", points[i].t, points[i].v);
    }
    out += "]}";
  }
  return out + "]}}";
}

// Every step of [from, to] at `v`.
std::vector<Point> Flat(double v, double from = kEnd - 3600, double to = kEnd) {
  std::vector<Point> out;
  for (double t = from; t <= to; t += 15) out.push_back({t, v});
  return out;
}

// A Prometheus in memory: the answer to each record's and verdict's query for job ml/llm.
struct FakePrometheus {
  JobOptions options;
  std::map<std::string, std::string> answers;  // record name or check id -> body
  std::map<std::string, std::string> recorded;  // the same, for the recorded series
  std::vector<std::string> asked;
  std::mutex mu;

  FakePrometheus() {
    options.job = {"ml", "llm"};
    options.until = FromUnixSeconds(static_cast<int64_t>(kEnd));
  }
  Fetch fetch() {
    return [this](const std::string& path) -> Result<std::string> {
      {
        std::lock_guard lock(mu);  // QueryJob asks from several threads
        asked.push_back(path);
      }
      for (const auto* table : {&answers, &recorded}) {
        for (const auto& [name, body] : *table) {
          std::string expr = name;  // a record's name, or a verdict's check id for its condition
          for (const Verdict& v : Verdicts()) {
            if (name == v.check) expr = v.expr;
          }
          std::string promql = table == &answers ? ForJob(ExpandRecords(expr), options.job)
                                                 : ForJobRecorded(expr, options.job);
          if (path == RangePath(promql, kEnd - 3600, kEnd, 15)) return body;
        }
      }
      return std::string(R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
    };
  }
};

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
  EXPECT_EQ(prom.asked.size(), 1u);  // nothing more is asked of a job that is not there
}

TEST(JobViewTest, NodesSideBySideAndTheFallbackVerdictWithItsOnset) {
  FakePrometheus prom;
  prom.answers[kInfo] = Matrix(FourNodes(1));
  prom.answers[kGpuUtilization] = Matrix(FourNodes(0.9));
  NodePoints rdma = FourNodes(1.2e10);
  rdma["node-2"] = Flat(0);
  prom.answers[kRdmaRate] = Matrix(rdma);
  prom.answers[kEthernetRate] = Matrix(FourNodes(2e7));
  prom.answers[kProcessTransport] = Matrix({{"node-2", Flat(1)}}, R"(,"transport":"Socket")");
  prom.answers[kFabricFallback] = Matrix({{"node-2", Flat(1, kEnd - 1200)}});
  // A storage blip on node-3 shorter than the alert's `for` (2 minutes): no verdict.
  prom.answers[kStorageStall] = Matrix({{"node-3", Flat(1, kEnd - 1800, kEnd - 1800 + 90)}});
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_EQ(view.step, 15);
  EXPECT_EQ(view.queries, Records().size() + Verdicts().size() + 1);  // + the records probe
  ASSERT_EQ(view.nodes.size(), 4u);
  EXPECT_EQ(view.nodes.at("node-2").transports.at("Socket"), 1u);
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

// The queries go out several at once; the view is the same as one at a time, in the same order.
TEST(JobViewTest, ParallelQueriesGiveTheSameViewAsOneAtATime) {
  FakePrometheus prom;
  prom.answers[kInfo] = Matrix(FourNodes(1));
  prom.answers[kGpuUtilization] = Matrix(FourNodes(0.9));
  prom.answers[kRdmaRate] = Matrix(FourNodes(1.2e10));
  prom.answers[kEthernetRate] = Matrix(FourNodes(2e7));
  prom.answers[kFabricFallback] = Matrix({{"node-2", Flat(1, kEnd - 1200)}});
  prom.answers[kStorageStall] = Matrix({{"node-3", Flat(1, kEnd - 1800)}});
  prom.options.parallel = 1;
  ASSERT_OK_AND_ASSIGN(JobView one, QueryJob(prom.fetch(), prom.options));
  std::vector<std::string> asked_one = prom.asked;
  prom.asked.clear();
  prom.options.parallel = 8;
  ASSERT_OK_AND_ASSIGN(JobView many, QueryJob(prom.fetch(), prom.options));
  EXPECT_EQ(asked_one.front(), prom.asked.front());  // the job's nodes first, alone
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
  }
  ASSERT_EQ(one.nodes.size(), many.nodes.size());
  for (const auto& [node, nv] : one.nodes) EXPECT_EQ(nv.series.size(), many.nodes.at(node).series.size());
}

// Prometheus recorded the rules over the whole window: their series are read, not re-evaluated.
TEST(JobViewTest, RecordedSeriesAreReadWhenTheyCoverEveryNodeOverTheWindow) {
  FakePrometheus prom;
  prom.answers[kInfo] = Matrix(FourNodes(1));
  prom.recorded[kInfo] = Matrix(FourNodes(1));
  prom.recorded[kGpuUtilization] = Matrix(FourNodes(0.9));
  prom.recorded[kRdmaRate] = Matrix(FourNodes(1.2e10));
  prom.recorded[kEthernetRate] = Matrix(FourNodes(2e7));
  prom.recorded[kStorageStall] = Matrix({{"node-3", Flat(1, kEnd - 1800)}});
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.recorded);
  EXPECT_EQ(view.queries, Records().size() + Verdicts().size() + 1);  // + the coverage probe
  for (size_t i = 2; i < prom.asked.size(); ++i) {
    EXPECT_EQ(prom.asked[i].find("tocsin_pod_info"), std::string::npos) << prom.asked[i];
  }
  ASSERT_EQ(view.episodes.size(), 1u);
  EXPECT_EQ(view.episodes[0].node, "node-3");
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  EXPECT_EQ(report.inventory["source"], "recorded");

  // The GPU record failing on one node (a GPU shared by two jobs makes its join many-to-many):
  // the expressions, so that the node's GPU utilisation is not silently missing.
  prom.asked.clear();
  NodePoints gpu = FourNodes(0.9);
  gpu.erase("node-2");
  prom.recorded[kGpuUtilization] = Matrix(gpu);
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  EXPECT_NE(prom.asked.back().find("tocsin_pod_info"), std::string::npos);
  prom.recorded[kGpuUtilization] = Matrix(FourNodes(0.9));

  // One node's records begin halfway (the rules deployed then): the expressions instead.
  prom.asked.clear();
  NodePoints partial = FourNodes(1);
  partial["node-4"] = Flat(1, kEnd - 1800);
  prom.recorded[kInfo] = Matrix(partial);
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  EXPECT_TRUE(view.episodes.empty());  // the stall was only in the (unread) records
  EXPECT_NE(prom.asked.back().find("tocsin_pod_info"), std::string::npos);
  report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  EXPECT_EQ(report.inventory["source"], "expressions");

  // Forced either way.
  prom.options.source = JobOptions::Source::kExpressions;
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_FALSE(view.recorded);
  prom.options.source = JobOptions::Source::kRecords;
  ASSERT_OK_AND_ASSIGN(view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.recorded);
}

// The three series every node needs, for all four nodes.
void AllInputs(FakePrometheus& prom) {
  prom.answers[kGpuUtilization] = Matrix(FourNodes(0.9));
  prom.answers[kRdmaRate] = Matrix(FourNodes(1.2e10));
  prom.answers[kEthernetRate] = Matrix(FourNodes(2e7));
}

TEST(JobViewTest, APastEpisodeSaysWhenItEnded) {
  FakePrometheus prom;
  prom.answers[kInfo] = Matrix(FourNodes(1));
  AllInputs(prom);
  prom.answers[kStorageStall] = Matrix({{"node-1", Flat(1, kEnd - 1800, kEnd - 900)}});
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  Report report = JobReport(view, "here", FromUnixSeconds(static_cast<int64_t>(kEnd)));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].check, kStorageStall);
  EXPECT_EQ(report.findings[0].evidence["ongoing"], false);
  EXPECT_EQ(report.findings[0].evidence["until"],
            FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(kEnd - 900))));
  EXPECT_NE(report.findings[0].message.find("over since"), std::string::npos);
}

// A node whose agent (or fabric task) is down has no series: no verdict can be judged there,
// and the report says so instead of reading as healthy.
TEST(JobViewTest, ANodeWithoutItsSeriesIsAFindingNotSilence) {
  FakePrometheus prom;
  prom.answers[kInfo] = Matrix(FourNodes(1));
  AllInputs(prom);
  NodePoints rdma = FourNodes(1.2e10);
  rdma.erase("node-3");
  prom.answers[kRdmaRate] = Matrix(rdma);
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
  prom.answers[kInfo] = Matrix(FourNodes(1));
  AllInputs(prom);
  prom.answers[kFabricFallback] =
      Matrix({{"node-2", {{1e300, 1}, {1e300 + 1e285, 1}, {-1e300, 1}}}});
  ASSERT_OK_AND_ASSIGN(JobView view, QueryJob(prom.fetch(), prom.options));
  EXPECT_TRUE(view.episodes.empty());
  EXPECT_GE(view.drops.points, 2u);
}

TEST(JobViewTest, SeriesOfOtherNodesOrWithoutANodeAreDroppedAndCounted) {
  FakePrometheus prom;
  prom.answers[kInfo] = Matrix({{"node-1", Flat(1)}});
  prom.answers[kRdmaRate] = Matrix({{"node-1", Flat(1)}, {"node-9", Flat(1)}});
  prom.answers[kNetworkStraggler] = R"({"status":"success","data":{"resultType":"matrix",)"
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
  prom.answers[kInfo] = Matrix(FourNodes(1));
  prom.answers[kLustreWait] =
      R"({"status":"error","errorType":"timeout","error":"query timed out"})";
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
}

TEST(JobViewTest, TheStepGrowsWithTheWindow) {
  FakePrometheus prom;
  prom.options.since = std::chrono::hours(24);
  std::string path;
  Fetch f = [&](const std::string& p) -> Result<std::string> {
    path = p;
    return Status::NotFound("stop");
  };
  (void)QueryJob(f, prom.options);
  EXPECT_TRUE(path.ends_with("&step=120")) << path;
  EXPECT_NE(path.find(fmt::format("&start={:.0f}&end={:.0f}", kEnd - 86400, kEnd)),
            std::string::npos);
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
