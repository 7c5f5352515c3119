#include "nccl/analyzer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "nccl/log_line.h"

namespace tocsin::nccl {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();  // Split returns views: keep the text alive
  std::vector<std::string> out;
  for (auto l : Split(text, '\n')) out.emplace_back(l);
  return out;
}

std::string Result(const Analyzer& a) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : a.Findings()) {
    findings.push_back({f.check, f.subject, f.message, f.evidence});
  }
  return a.Inventory().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
         findings.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Options Opts() {
  Options o;
  o.expect_gdr = true;
  o.min_busbw = 250;
  return o;
}

Analyzer Fed(const std::vector<std::string>& lines) {
  Analyzer a(Options{});
  a.BeginInput("log");
  for (const auto& l : lines) a.FeedLine(l);
  return a;
}

const Process* Find(const Analyzer& a, const std::string& host, int64_t pid) {
  for (const auto& [key, p] : a.processes()) {
    if (p.host == host && p.pid == pid) return &p;
  }
  return nullptr;
}

std::vector<Finding> FindingsOf(const Analyzer& a, const std::string& check) {
  std::vector<Finding> out;
  for (auto& f : a.Findings()) {
    if (f.check == check) out.push_back(f);
  }
  return out;
}

// NCCL prints the bare version line from ncclCommInitRank when myrank == 0, before that rank's
// init completes: it is rank 0's, not the next new process's (issue 14).
TEST(AnalyzerTest, BareVersionGoesToRankZero) {
  Analyzer a = Fed({
      "a:1:1 [0] NCCL INFO Using network IB",
      "NCCL version 2.8.4+cuda11.2",
      "b:2:2 [0] NCCL INFO Using network IB",
      "b:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
  });
  EXPECT_EQ(Find(a, "a", 1)->version, "2.8.4");
  EXPECT_EQ(Find(a, "b", 2)->version, "");
  EXPECT_EQ(a.Inventory()["summary"]["nccl_versions"], nlohmann::json::array({"2.8.4"}));
  // No rank 0 completed init: the version is the job's, not any process's.
  Analyzer none = Fed({"NCCL version 2.8.4+cuda11.2", "b:2:2 [0] NCCL INFO Using network IB"});
  EXPECT_EQ(Find(none, "b", 2)->version, "");
  EXPECT_EQ(none.Inventory()["summary"]["nccl_versions"], nlohmann::json::array({"2.8.4"}));
}

TEST(AnalyzerTest, WarnsThatDidNotFailInitAreInfo) {
  Analyzer a = Fed({
      // benign by NCCL's source, no Init COMPLETE after it
      "a:1:1 [0] graph/search.cc:765 NCCL WARN Could not find a path for pattern 4, falling back "
      "to simple order",
      // unknown, followed by Init COMPLETE
      "b:2:2 [0] init.cc:400 NCCL WARN something new",
      "b:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
  });
  EXPECT_TRUE(FindingsOf(a, "nccl.init.failed").empty());
  auto info = FindingsOf(a, "nccl.warn");
  ASSERT_EQ(info.size(), 2u);
  for (const auto& f : info) EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_EQ(info[0].evidence["warnings"][0]["kind"], "benign");
  EXPECT_EQ(info[1].evidence["warnings"][0]["text"], "something new");
  EXPECT_TRUE(info[1].evidence["warnings"][0]["init_complete_after"].get<bool>());
}

TEST(AnalyzerTest, WarnsThatFailedInitAreErrors) {
  Analyzer a = Fed({
      // unknown and nothing follows
      "a:1:1 [0] init.cc:400 NCCL WARN something new",
      // fatal although another communicator completed after it
      "b:2:2 [0] include/checks.h:10 NCCL WARN Cuda failure 'out of memory'",
      "b:2:2 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
      // after init completed and not followed by another: a runtime error
      "c:3:3 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE",
      "c:3:3 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer x with "
      "error 12",
  });
  auto failed = FindingsOf(a, "nccl.init.failed");
  ASSERT_EQ(failed.size(), 3u);
  EXPECT_EQ(failed[0].subject, "a/pid 1");
  EXPECT_NE(failed[0].message.find("no Init COMPLETE followed it: something new"),
            std::string::npos);
  EXPECT_NE(failed[1].message.find("NCCL returns an error after it"), std::string::npos);
  EXPECT_NE(failed[2].message.find("runtime"), std::string::npos);
  EXPECT_TRUE(FindingsOf(a, "nccl.warn").empty());
}

// Lines without a full header: attributed by host (or input) and device; a WARN with nothing to
// attribute it to is still a finding.
TEST(AnalyzerTest, PartialHeadersAreAttributedAndNothingVanishes) {
  Analyzer a = Fed({
      "node-b:XXXXXX [1] NCCL INFO Using network IB",
      "node-b:XXXXXX [1] NCCL INFO comm 0x1 rank 3 nranks 4 cudaDev 1 busId 19000 - Init COMPLETE",
      " [0] NCCL INFO Using network Socket",
      "NCCL WARN Cuda failure 'an illegal memory access was encountered'",
      "garbage NCCL INFO Using network IB",
  });
  ASSERT_EQ(a.processes().size(), 2u);
  const Process* redacted = Find(a, "node-b", -1);
  ASSERT_NE(redacted, nullptr);
  EXPECT_EQ(redacted->cuda_dev, 1);
  EXPECT_EQ(redacted->Subject(), "node-b/3");
  const Process* device = Find(a, "", -1);
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->network, "Socket");
  EXPECT_EQ(device->Subject(), "log/device 0");
  auto failed = FindingsOf(a, "nccl.init.failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].subject, "log (lines without host, pid or device)");
  EXPECT_EQ(a.Inventory()["inputs"][0]["unattributed_lines"], 1);
}

// Reading a file in chunks on several threads and merging, with nccl-tests output parsed by one
// sequential pass, must give what reading it in order gives: every fixture, cut at many places
// (inside nccl-tests tables too), into 2 and 3 chunks.
TEST(AnalyzerTest, ChunkedMergeEqualsSequential) {
  std::string dir = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto lines = Lines(entry.path());
    Analyzer whole(Opts());
    whole.BeginInput("log");
    for (const auto& l : lines) whole.FeedLine(l);
    std::string expected = Result(whole);
    size_t n = lines.size();
    for (size_t cut = 1; cut < n; cut += std::max<size_t>(1, n / 23)) {
      for (size_t parts : {2, 3}) {
        std::vector<size_t> bounds = {0, cut};
        if (parts == 3) bounds.push_back(cut + (n - cut) / 2);
        bounds.push_back(n);
        std::vector<Analyzer> chunks;
        for (size_t c = 0; c + 1 < bounds.size(); ++c) {
          chunks.emplace_back(Opts());
          chunks.back().BeginInput("log");
          chunks.back().DisablePerf();
          for (size_t i = bounds[c]; i < bounds[c + 1]; ++i) chunks.back().FeedLine(lines[i]);
        }
        for (size_t c = 1; c < chunks.size(); ++c) chunks[0].MergeFrom(std::move(chunks[c]));
        for (const auto& l : lines) {  // the sequential pass over the non-NCCL lines
          if (!ParseLogLine(l)) chunks[0].FeedPerf(l);
        }
        EXPECT_EQ(Result(chunks[0]), expected)
            << entry.path().filename() << " cut at line " << cut << " into " << parts;
      }
    }
    ++files;
  }
  EXPECT_GE(files, 20);
}

}  // namespace
}  // namespace tocsin::nccl
