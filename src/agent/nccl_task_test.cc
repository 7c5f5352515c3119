#include "agent/nccl_task.h"

#include <fcntl.h>
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

// The node's files, but the log at `broken` opens as something read(2) fails on (EISDIR): a
// disk or filesystem error in the middle of a pod's log.
class BrokenLogEnv : public Env {
 public:
  BrokenLogEnv(const std::string& root, std::string broken)
      : real_(NewRootedEnv(root)), broken_(std::move(broken)) {}
  Result<int> OpenFile(std::string_view p) override {
    if (p != broken_) return real_->OpenFile(p);
    return ::open(real_->root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  Result<std::string> ReadFile(std::string_view p, size_t max) override {
    return real_->ReadFile(p, max);
  }
  Result<std::vector<std::string>> ListDir(std::string_view p) override {
    return real_->ListDir(p);
  }
  Result<std::string> ReadLink(std::string_view p) override { return real_->ReadLink(p); }
  Result<std::string> RealPath(std::string_view p) override { return real_->RealPath(p); }
  bool IsDirectory(std::string_view p) override { return real_->IsDirectory(p); }
  Result<FsStats> StatFs(std::string_view p) override { return real_->StatFs(p); }
  TimePoint Now() override { return real_->Now(); }
  const std::string& root() const override { return real_->root(); }

 private:
  std::unique_ptr<Env> real_;
  std::string broken_;
};

// Issue 14: the task split pod logs itself, outside the Env, and a read error ended the log as
// if it were complete. The logs are read through the Env, and a pod whose log cannot be read has
// its checks unknown, with the error, instead of a silent "ok".
TEST_F(NcclTaskTest, ALogThatCannotBeReadMakesItsChecksUnknown) {
  WriteLog("broken", "2026-11-30T00:00:00Z stdout F node1:7:7 [0] NCCL INFO Using network IB\n");
  WriteLog("fine", "2026-11-30T00:00:00Z stdout F node2:7:7 [0] NCCL INFO Using network IB\n");
  std::string root = root_.string();
  TaskSpec t = NcclLogTask([root] {
    return std::make_unique<BrokenLogEnv>(root, "/var/log/pods/ml_broken_uid/c/0.log");
  });
  auto out = t.run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  size_t unknown = 0;
  for (const auto& f : out->findings) {
    if (f.evidence.value("result", "") != "unknown") continue;
    EXPECT_EQ(f.subject, "ml/broken");
    EXPECT_NE(f.message.find("0.log"), std::string::npos) << f.message;
    ++unknown;
  }
  EXPECT_EQ(unknown, t.checks.size());
  const auto* info = Family(*out, "tocsin_nccl_process_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->metric.size(), 1u);  // the readable pod's process
}

}  // namespace
}  // namespace tocsin::agent
