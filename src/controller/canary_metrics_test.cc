#include "controller/canary_metrics.h"

#include <gtest/gtest.h>

namespace tocsin::controller {
namespace {

// The value of one series of a collected family, or -1 when the series is absent.
double Value(const CanaryRunner::Metrics& m, const std::string& family, const std::string& key,
             const std::string& value) {
  for (const auto& f : m.Collect()) {
    if (f.name != family) continue;
    for (const auto& s : f.metric) {
      for (const auto& l : s.label) {
        if (l.name == key && l.value == value) {
          return f.type == prometheus::MetricType::Counter ? s.counter.value : s.gauge.value;
        }
      }
    }
  }
  return -1;
}

TEST(CanaryMetricsTest, AJudgedPassIsCountedWithTheLastPassItProduced) {
  CanaryRunner::Metrics m;
  m.CountJudged("pass");
  // Between the judgement and the rebuild a scrape sees neither, never the count alone.
  EXPECT_EQ(Value(m, "tocsin_canary_runs_total", "outcome", "pass"), 0);
  EXPECT_EQ(Value(m, "tocsin_canary_last_pass_timestamp_seconds", "node", "n1"), -1);
  m.SetCoverage(1, 1, {{"n1", 1780000000}, {"n2", 1780000000}});
  EXPECT_EQ(Value(m, "tocsin_canary_runs_total", "outcome", "pass"), 1);
  EXPECT_EQ(Value(m, "tocsin_canary_last_pass_timestamp_seconds", "node", "n1"), 1780000000);
  m.SetCoverage(1, 1, {{"n1", 1780000000}});
  EXPECT_EQ(Value(m, "tocsin_canary_runs_total", "outcome", "pass"), 1);  // counted once
}

TEST(CanaryMetricsTest, SkippedRoundsCountAtOnce) {
  CanaryRunner::Metrics m;
  m.CountRun("skipped");
  EXPECT_EQ(Value(m, "tocsin_canary_runs_total", "outcome", "skipped"), 1);
}

}  // namespace
}  // namespace tocsin::controller
