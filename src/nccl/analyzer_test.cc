#include "nccl/analyzer.h"

#include <fmt/format.h>
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
  EXPECT_GE(files, 10);
}

// Issue 13: a pod's log with 100,000 fake processes took the agent to 900 MB. Processes beyond
// the cap are counted, not kept, and the report says it cannot tell.
TEST(AnalyzerTest, ProcessesBeyondTheCapAreCountedNotKept) {
  Options o;
  o.max_processes = 100;
  Analyzer a(o);
  a.BeginInput("log");
  for (int i = 0; i < 1000; ++i) {
    std::string pre = fmt::format("host{}:{}:{} [0] NCCL INFO ", i, 1000 + i, 1000 + i);
    a.FeedLine(pre + "Using network IB");
    a.FeedLine(pre + "NCCL_IB_DISABLE set by environment to 1.");
  }
  EXPECT_EQ(a.processes().size(), 100u);
  EXPECT_EQ(a.dropped_lines(), 1800u);
  EXPECT_TRUE(a.Capped());
  auto findings = a.Findings();
  auto it = std::find_if(findings.begin(), findings.end(),
                         [](const Finding& f) { return f.check == "nccl.log.capped"; });
  ASSERT_NE(it, findings.end());
  EXPECT_EQ(it->evidence["result"], "unknown");
  EXPECT_EQ(it->evidence["dropped_lines"], 1800);
  EXPECT_EQ(a.Inventory()["summary"]["dropped_lines"], 1800);
}

// Whatever the processes log (hosts and texts as long as a line may be), the bookkeeping stays
// within its byte budget: texts are cut, a host longer than a DNS name is no host.
TEST(AnalyzerTest, MemoryStaysWithinTheByteBudget) {
  Options o;
  o.max_bytes = 256 << 10;
  Analyzer a(o);
  a.BeginInput("log");
  std::string longtext(2000, 'x');
  for (int i = 0; i < 2000; ++i) {
    std::string host = fmt::format("h{:0>250}", i);
    std::string pre = fmt::format("{}:{}:1 [0] NCCL INFO ", host, i);
    a.FeedLine(pre + "NCCL_" + std::to_string(i % 97) + longtext + " set by environment to " +
               longtext);
    a.FeedLine(pre + "NET/Socket : Using [0]eth" + longtext + ":10.0.0.1<0>");
    a.FeedLine(fmt::format("{}:{}:1 [0] main.cc:1 NCCL WARN {}{}", host, i, i, longtext));
  }
  a.FeedLine(std::string(300, 'h') + ":1:1 [0] NCCL INFO Using network IB");  // no host
  EXPECT_LE(a.stored_bytes(), o.max_bytes);
  EXPECT_GT(a.processes().size(), 20u);
  EXPECT_LT(a.processes().size(), 2000u);
  EXPECT_GT(a.dropped_lines(), 0u);
  for (const auto& [key, p] : a.processes()) {
    EXPECT_LE(key.first.size(), kMaxHostBytes);
    for (const auto& [name, value] : p.env) {
      EXPECT_LE(name.size(), kMaxTextBytes);
      EXPECT_LE(value.size(), kMaxTextBytes);
    }
    for (const auto& w : p.warnings) EXPECT_LE(w.size(), kMaxTextBytes);
    for (const auto& n : p.nics) EXPECT_LE(n.size(), kMaxTextBytes);
  }
}

// Chunks read in parallel keep their own caps; their merge keeps the whole's and counts the
// lines of the processes it leaves out.
TEST(AnalyzerTest, MergeKeepsTheCaps) {
  Options o;
  o.max_processes = 50;
  std::vector<Analyzer> chunks;
  for (int c = 0; c < 2; ++c) {
    chunks.emplace_back(o);
    chunks.back().BeginInput("log");
    for (int i = 0; i < 40; ++i) {
      chunks.back().FeedLine(
          fmt::format("host{}:{}:1 [0] NCCL INFO Using network IB", c * 100 + i, i));
    }
  }
  chunks[0].MergeFrom(std::move(chunks[1]));
  EXPECT_EQ(chunks[0].processes().size(), 50u);
  EXPECT_EQ(chunks[0].dropped_lines(), 30u);
}

TEST(AnalyzerTest, NcclTestsRunsAreCapped) {
  Analyzer a(Options{});
  a.BeginInput("log");
  for (size_t i = 0; i < PerfParser::kMaxRuns + 10; ++i) {
    a.FeedLine("# Collective test starting: all_reduce_perf");
    a.FeedLine("#  Rank  0 Group  0 Pid   1234 on     host device  0 [0000:18:00] NVIDIA H100");
  }
  EXPECT_EQ(a.perf_runs().size(), PerfParser::kMaxRuns);
  EXPECT_EQ(a.dropped_perf(), 10u);
  EXPECT_TRUE(a.Capped());
}

}  // namespace
}  // namespace tocsin::nccl
