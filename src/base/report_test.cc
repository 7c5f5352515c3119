#include "base/report.h"

#include <gtest/gtest.h>

namespace tocsin {
namespace {

Report Sample() {
  Report r;
  r.command = "node";
  r.host = "gpu-01";
  r.generated_at = FromUnixSeconds(1754000000);
  Finding warn{"rdma.port.errors", Severity::kWarning, "mlx5_0/1",
               "symbol_error=3",   std::nullopt,       {{"symbol_error", 3}}};
  Finding err{"rdma.port.down",
              Severity::kError,
              "mlx5_1/1",
              "port is DOWN",
              FromUnixSeconds(1753990000),
              {}};
  r.findings = {warn, err};
  r.inventory = {{"rdma", {{"devices", nlohmann::json::array()}}}};
  r.tables.push_back({"RDMA PORTS", {"DEVICE", "STATE"}, {{"mlx5_0/1", "4: ACTIVE"}}, {}});
  return r;
}

TEST(ReportTest, JsonFollowsContract) {
  Report r = Sample();
  SortFindings(r.findings);
  auto j = ReportToJson(r);
  EXPECT_EQ(j["command"], "node");
  EXPECT_EQ(j["host"], "gpu-01");
  EXPECT_EQ(j["generated_at"], "2025-07-31T22:13:20Z");
  EXPECT_EQ(j["status"], "error");
  ASSERT_EQ(j["findings"].size(), 2u);
  EXPECT_EQ(j["findings"][0]["check"], "rdma.port.down");  // worst first
  EXPECT_EQ(j["findings"][0]["since"], "2025-07-31T19:26:40Z");
  EXPECT_TRUE(j["findings"][1]["since"].is_null());
  EXPECT_EQ(j["findings"][1]["evidence"]["symbol_error"], 3);
  EXPECT_TRUE(j.contains("tocsin_version"));
  EXPECT_TRUE(j["inventory"].contains("rdma"));
}

TEST(ReportTest, RenderersPrintFindingsInTheReportsOrder) {
  Report r = Sample();  // warning first, unsorted
  Finding info{.check = "rdma.device.missing", .severity = Severity::kInfo, .subject = "node"};
  r.findings.insert(r.findings.begin(), info);
  auto j = ReportToJson(r);
  ASSERT_EQ(j["findings"].size(), 3u);
  EXPECT_EQ(j["findings"][0]["check"], "rdma.port.down");
  EXPECT_EQ(j["findings"][1]["check"], "rdma.port.errors");
  EXPECT_EQ(j["findings"][2]["check"], "rdma.device.missing");
  std::string table = RenderReport(r, OutputFormat::kTable);
  EXPECT_LT(table.find("rdma.port.down"), table.find("rdma.port.errors")) << table;
  EXPECT_EQ(r.findings[0].check, "rdma.device.missing");  // the report itself is untouched
}

TEST(ReportTest, SortBySeverityThenCheckThenSubject) {
  std::vector<Finding> f = {
      {.check = "b.x", .severity = Severity::kWarning, .subject = "2"},
      {.check = "b.x", .severity = Severity::kWarning, .subject = "1"},
      {.check = "a.x", .severity = Severity::kWarning, .subject = "9"},
      {.check = "z.x", .severity = Severity::kCritical, .subject = "0"},
  };
  SortFindings(f);
  EXPECT_EQ(f[0].check, "z.x");
  EXPECT_EQ(f[1].check, "a.x");
  EXPECT_EQ(f[2].subject, "1");
  EXPECT_EQ(f[3].subject, "2");
}

TEST(ReportTest, SortBySubjectGroupsByWorstThenOldestOnset) {
  std::vector<Finding> f = {
      {.check = "a.x",
       .severity = Severity::kWarning,
       .subject = "n1",
       .since = FromUnixSeconds(300)},
      {.check = "a.y", .severity = Severity::kError, .subject = "n2"},
      {.check = "a.z",
       .severity = Severity::kError,
       .subject = "n1",
       .since = FromUnixSeconds(200)},
      {.check = "a.w",
       .severity = Severity::kError,
       .subject = "n3",
       .since = FromUnixSeconds(100)},
      {.check = "a.v", .severity = Severity::kInfo, .subject = "n4"},
  };
  SortFindings(f, FindingOrder::kBySubject);
  // n3 and n1 (error, with onsets: oldest first), then n2 (error, no onset), then n4.
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].subject, "n3");
  EXPECT_EQ(f[1].check, "a.z");  // n1's error first, then its warning
  EXPECT_EQ(f[2].check, "a.x");
  EXPECT_EQ(f[3].subject, "n2");
  EXPECT_EQ(f[4].subject, "n4");
}

TEST(ReportTest, StatusOkWithoutFindings) {
  Report r;
  EXPECT_EQ(ReportToJson(r)["status"], "ok");
  EXPECT_EQ(ExitCodeFor(r, Severity::kError, false), kExitOk);
}

TEST(ReportTest, ExitCodeHonoursFailOnAndObserveOnly) {
  Report r = Sample();
  EXPECT_EQ(ExitCodeFor(r, Severity::kError, false), kExitFindings);
  EXPECT_EQ(ExitCodeFor(r, Severity::kCritical, false), kExitOk);
  EXPECT_EQ(ExitCodeFor(r, Severity::kWarning, false), kExitFindings);
  EXPECT_EQ(ExitCodeFor(r, Severity::kInfo, true), kExitOk);
}

TEST(ReportTest, TableShowsFindingsAndSections) {
  Report r = Sample();
  std::string out = RenderReport(r, OutputFormat::kTable);
  EXPECT_NE(out.find("status=error"), std::string::npos);
  EXPECT_NE(out.find("rdma.port.down"), std::string::npos);
  EXPECT_NE(out.find("RDMA PORTS"), std::string::npos);
  EXPECT_NE(out.find("4: ACTIVE"), std::string::npos);
}

TEST(ReportTest, TableCellsCannotEscapeTheTerminalOrForgeRows) {
  Report r = Sample();
  r.host = "node\x1b]0;owned\x07";
  r.findings[0].message = "red \x1b[31mtext\nerror  rdma.port.down  mlx5_9  forged row \xc2\x9b";
  r.findings[0].subject = "caf\xc3\xa9 \xe2\x9c\x93";  // valid UTF-8 stays
  std::string out = RenderReport(r, OutputFormat::kTable);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(out.find('\x07'), std::string::npos);
  EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(out.find("red \\x1b[31mtext\\nerror"), std::string::npos) << out;
  EXPECT_NE(out.find("\\u009b"), std::string::npos);
  EXPECT_NE(out.find("caf\xc3\xa9 \xe2\x9c\x93"), std::string::npos);
  // The message stays on its finding's line: one FINDINGS row per finding.
  size_t rows = 0;
  for (size_t at = out.find("forged row"); at != std::string::npos; at = out.find("forged row", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 1u);
  EXPECT_EQ(out.substr(0, out.find('\n')).find("forged"), std::string::npos);
}

// Long messages (NCCL WARNs, API errors) made 200-260-column rows: the widest column wraps to
// the width, under its row, and no line is wider than the width.
TEST(ReportTest, LongMessagesWrapToTheWidth) {
  Report r = Sample();
  std::string words;
  for (int i = 0; i < 30; ++i) words += "word" + std::to_string(i) + " ";
  r.findings[0].message = "NET/IB : Got completion with error 12, opcode 1, len 0 " + words +
                          std::string(150, 'z');
  for (size_t width : {size_t{100}, size_t{120}, size_t{160}}) {
    std::string out = RenderReport(r, OutputFormat::kTable, width);
    size_t widest = 0, lines = 0;
    for (size_t at = 0, nl; at < out.size(); at = nl + 1) {
      nl = out.find('\n', at);
      widest = std::max(widest, nl - at);
      ++lines;
    }
    EXPECT_LE(widest, width) << out;
    // Nothing is lost: every word is there, in order, and the long run is cut, not dropped.
    size_t prev = 0;
    for (int i = 0; i < 30; ++i) {
      size_t at = out.find("word" + std::to_string(i) + " ");
      if (at == std::string::npos) at = out.find("word" + std::to_string(i) + "\n");
      ASSERT_NE(at, std::string::npos) << i << "\n" << out;
      EXPECT_GT(at, prev);
      prev = at;
    }
    size_t xs = 0;
    for (char c : out) xs += c == 'z';
    EXPECT_EQ(xs, 150u);
    // The severity and check stay on the finding's first line.
    size_t first = out.find("rdma.port.errors");
    EXPECT_NE(out.substr(out.rfind('\n', first) + 1).find("NET/IB"), std::string::npos);
  }
  // A short table keeps one line per row.
  Report s = Sample();
  std::string narrow = RenderReport(s, OutputFormat::kTable, 100);
  EXPECT_EQ(narrow, RenderReport(s, OutputFormat::kTable, 400));
}

TEST(ReportTest, LongNotesWrapToo) {
  Report r = Sample();
  r.tables[0].notes.push_back(std::string(60, 'a') + " " + std::string(60, 'b'));
  std::string out = RenderReport(r, OutputFormat::kTable, 100);
  EXPECT_NE(out.find("  note: " + std::string(60, 'a') + "\n        " + std::string(60, 'b')),
            std::string::npos)
      << out;
}

TEST(ReportTest, InvalidUtf8DoesNotThrow) {
  Report r = Sample();
  r.findings[0].message = std::string("bad \xff\xfe bytes");
  std::string out;
  ASSERT_NO_THROW(out = RenderReport(r, OutputFormat::kJson));
  // Still one valid JSON document (UTF-8 throughout), the message kept with its bytes replaced.
  auto doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out;
  std::string message = doc["findings"][1]["message"];  // the warning: printed after the error
  EXPECT_EQ(message.rfind("bad ", 0), 0u) << message;
  EXPECT_NE(message.find("bytes"), std::string::npos) << message;
  EXPECT_EQ(message.find('\xff'), std::string::npos) << message;
}

}  // namespace
}  // namespace tocsin
