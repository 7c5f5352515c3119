#include "nccl/analyzer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "nccl/analyzer_testing.h"
#include "nccl/log_line.h"
#include "testing/findings.h"

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
  return ::tocsin::testing::FindingsOf(a.Findings(), check);
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
    std::string expected = testing::AnalysisText(whole);
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
        EXPECT_EQ(testing::AnalysisText(chunks[0]), expected)
            << entry.path().filename() << " cut at line " << cut << " into " << parts;
      }
    }
    ++files;
  }
  EXPECT_GE(files, 20);
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
    // Lines without pid (issue 14): their processes and WARN texts take from the same budget.
    a.FeedLine(fmt::format("{}:XXXXXX [1] main.cc:1 NCCL WARN {}{}", host, i, longtext));
    a.FeedLine(
        fmt::format(" [{}] NCCL INFO NET/Socket : Using [0]eth{}{}:10.0.0.1<0>", i, i, longtext));
    a.FeedLine(fmt::format("NCCL WARN {}{}", i, longtext));  // nothing to pin it on
  }
  a.FeedLine(std::string(300, 'h') + ":1:1 [0] NCCL INFO Using network IB");  // no host
  a.FeedLine(std::string(300, 'h') + ":XXXXXX [0] NCCL INFO Using network IB");
  EXPECT_LE(a.stored_bytes(), o.max_bytes);
  EXPECT_GT(a.processes().size(), 20u);
  EXPECT_LT(a.processes().size(), 2000u);
  EXPECT_GT(a.dropped_lines(), 0u);
  size_t partial = 0;
  for (const auto& [key, p] : a.processes()) {
    EXPECT_LE(p.host.size(), kMaxHostBytes);
    if (p.pid >= 0) {
      EXPECT_LE(key.first.size(), kMaxHostBytes);
    } else {
      partial++;
    }
    for (const auto& [name, value] : p.env) {
      EXPECT_LE(name.size(), kMaxTextBytes);
      EXPECT_LE(value.size(), kMaxTextBytes);
    }
    for (const auto& w : p.warnings.kept) EXPECT_LE(w.text.size(), kMaxTextBytes);
    for (const auto& n : p.nics) EXPECT_LE(n.size(), kMaxTextBytes);
  }
  EXPECT_GT(partial, 0u);
  auto unattributed = a.Inventory()["inputs"][0]["unattributed_warnings"];
  EXPECT_GT(unattributed.size(), 0u);
  for (const auto& w : unattributed) EXPECT_LE(w["text"].get<std::string>().size(), kMaxTextBytes);
}

// Processes of lines without pid (issue 14) are admitted under the same cap as the others; the
// WARN lines of those left out are counted, and their texts kept nowhere.
TEST(AnalyzerTest, PartialProcessesBeyondTheCapAreCountedNotKept) {
  Options o;
  o.max_processes = 4;
  Analyzer a(o);
  a.BeginInput("log");
  for (int i = 0; i < 10; ++i) {
    a.FeedLine(fmt::format("node-{}:XXXXXX [0] NCCL INFO Using network IB", i));
    a.FeedLine(fmt::format(" [{}] NCCL INFO Using network Socket", i));
    a.FeedLine(fmt::format("node-{}:XXXXXX [0] main.cc:1 NCCL WARN Cuda failure {}", i, i));
  }
  // Kept: node-0 and node-1 (3 lines each), devices 0 and 1 of the input (1 line each).
  EXPECT_EQ(a.processes().size(), 4u);
  EXPECT_EQ(a.dropped_lines(), 24u);
  EXPECT_TRUE(a.Capped());
  uint64_t warns = 0;
  for (const auto& [key, p] : a.processes()) {
    EXPECT_LT(p.pid, 0);
    warns += p.warnings.count;
  }
  EXPECT_EQ(warns, 2u);
}

// With the byte budget spent, a WARN still counts (and can still fail init), but a new text is
// not kept and its line is counted as dropped: the report says it cannot tell.
TEST(AnalyzerTest, WarnTextsAreChargedToTheBudget) {
  Options o;
  o.max_bytes = 8 << 10;
  Analyzer a(o);
  a.BeginInput("log");
  for (int i = 0; i < 200; ++i) {
    a.FeedLine(fmt::format("host:1:1 [0] main.cc:1 NCCL WARN {} {}", i, std::string(200, 'w')));
    a.FeedLine(fmt::format("NCCL WARN {} {}", i, std::string(200, 'u')));
  }
  EXPECT_LE(a.stored_bytes(), o.max_bytes);
  ASSERT_EQ(a.processes().size(), 1u);
  const Process& p = a.processes().begin()->second;
  EXPECT_EQ(p.warnings.count, 200u);
  EXPECT_GT(p.warnings.kept.size(), 0u);
  EXPECT_LT(p.warnings.kept.size(), 20u);
  EXPECT_GT(a.dropped_lines(), 0u);
  EXPECT_EQ(FindingsOf(a, "nccl.init.failed").size(), 2u);  // the process and the input
  EXPECT_EQ(FindingsOf(a, "nccl.log.capped").size(), 1u);
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

// The merge charges what it keeps of a later chunk's WARN texts (the process's and the input's)
// to the whole's budget, as reading in order would have.
TEST(AnalyzerTest, MergeChargesWarnTexts) {
  Options o;
  o.max_bytes = 12 << 10;  // each chunk's texts fit, not both chunks'
  std::vector<Analyzer> chunks;
  for (int c = 0; c < 2; ++c) {
    chunks.emplace_back(o);
    chunks.back().BeginInput("log");
    for (int i = 0; i < 10; ++i) {
      chunks.back().FeedLine(fmt::format("host:1:1 [0] main.cc:1 NCCL WARN {} {}", c * 100 + i,
                                         std::string(200, 'w')));
      chunks.back().FeedLine(
          fmt::format(" [3] main.cc:1 NCCL WARN {} {}", c * 100 + i, std::string(200, 'd')));
      chunks.back().FeedLine(fmt::format("NCCL WARN {} {}", c * 100 + i, std::string(200, 'u')));
    }
  }
  for (const auto& c : chunks) EXPECT_EQ(c.dropped_lines(), 0u);
  chunks[0].MergeFrom(std::move(chunks[1]));
  const Analyzer& a = chunks[0];
  EXPECT_LE(a.stored_bytes(), o.max_bytes);
  EXPECT_GT(a.dropped_lines(), 0u);
  uint64_t warns = 0;
  for (const auto& [key, p] : a.processes()) warns += p.warnings.count;
  EXPECT_EQ(warns, 40u);
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
