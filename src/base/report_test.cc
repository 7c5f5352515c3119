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

TEST(ReportTest, InvalidUtf8DoesNotThrow) {
  Report r = Sample();
  r.findings[0].message = std::string("bad \xff\xfe bytes");
  EXPECT_NO_THROW(RenderReport(r, OutputFormat::kJson));
}

}  // namespace
}  // namespace tocsin
