#include "agent/nccl_task.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::agent {
namespace {

namespace fs = std::filesystem;

class NcclTaskTest : public ::testing::Test {
 protected:
  // Writes `text` as the log of container `c` of pod ml/<pod>.
  void WriteLog(const std::string& pod, const std::string& text) {
    fs::path dir = root_ / "var/log/pods" / ("ml_" + pod + "_uid") / "c";
    fs::create_directories(dir);
    std::ofstream(dir / "0.log") << text;
  }

  const prometheus::MetricFamily* Family(const TaskOutput& out, const std::string& name) {
    for (const auto& f : out.families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  ::tocsin::testing::ScopedTempDir tmp_{"nccl-task-test"};
  fs::path root_ = tmp_.path();
};

// Issue 13: one pod's log with thousands of fake NCCL processes took the agent to 900 MB and
// /metrics to 100,000 series. The task keeps a job's worth, exports at most 1,024 process series,
// exports what it dropped, and its checks are unknown for that pod: it cannot say ok.
TEST_F(NcclTaskTest, AFloodOfFakeProcessesIsCappedCountedAndUnknown) {
  std::string flood;
  for (int i = 0; i < 6000; ++i) {
    flood += fmt::format(
        "2026-11-30T00:00:00Z stdout F host{}:{}:1 [0] NCCL INFO Using network IB\n", i, i);
  }
  WriteLog("flood", flood);
  WriteLog("fine", "2026-11-30T00:00:00Z stdout F node1:7:7 [0] NCCL INFO Using network IB\n");
  TaskSpec t = NcclLogTask(root_.string());
  auto out = t.run();
  ASSERT_OK(out);

  const auto* info = Family(*out, "tocsin_nccl_process_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->metric.size(), 1024u);
  const auto* dropped = Family(*out, "tocsin_nccl_dropped");
  ASSERT_NE(dropped, nullptr);
  ASSERT_EQ(dropped->metric.size(), 2u);
  EXPECT_EQ(dropped->metric[0].label[0].value, "lines");
  EXPECT_GE(dropped->metric[0].gauge.value, 6000 - 4096);
  EXPECT_EQ(dropped->metric[1].label[0].value, "series");
  EXPECT_GT(dropped->metric[1].gauge.value, 1000);

  size_t unknown = 0;
  for (const auto& f : out->findings) {
    if (f.evidence.value("result", "") != "unknown") continue;
    EXPECT_EQ(f.subject, "ml/flood");  // the small pod's log was read in full
    ++unknown;
  }
  EXPECT_EQ(unknown, t.checks.size());
}

}  // namespace
}  // namespace tocsin::agent
