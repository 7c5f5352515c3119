#include "base/report.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/strings.h"
#include "tocsin/version.h"

namespace tocsin {
namespace {

std::string StatusName(const std::vector<Finding>& findings) {
  auto worst = WorstSeverity(findings);
  return worst ? std::string(SeverityName(*worst)) : "ok";
}

// Width in terminal columns, counting UTF-8 continuation bytes as zero.
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

void RenderTable(const Table& raw, std::string& out) {
  // Every cell may come from a snapshot, a log or a peer: no terminal escapes, no forged rows.
  Table table = raw;
  table.title = EscapeControl(table.title);
  for (auto& c : table.columns) c = EscapeControl(c);
  for (auto& row : table.rows) {
    for (auto& cell : row) cell = EscapeControl(cell);
  }
  for (auto& note : table.notes) note = EscapeControl(note);
  out += table.title + "\n";
  if (table.rows.empty()) {
    out += "  (none)\n";
  } else {
    std::vector<size_t> widths(table.columns.size(), 0);
    for (size_t i = 0; i < table.columns.size(); ++i) widths[i] = DisplayWidth(table.columns[i]);
    for (const auto& row : table.rows) {
      for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
        widths[i] = std::max(widths[i], DisplayWidth(row[i]));
      }
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string l = " ";
      for (size_t i = 0; i < widths.size(); ++i) {
        const std::string cell = i < cells.size() ? cells[i] : "";
        l += " " + cell;
        if (i + 1 < widths.size()) l += std::string(widths[i] - DisplayWidth(cell), ' ');
        if (i + 1 < widths.size()) l += " ";
      }
      while (!l.empty() && l.back() == ' ') l.pop_back();
      out += l + "\n";
    };
    line(table.columns);
    for (const auto& row : table.rows) line(row);
  }
  for (const auto& note : table.notes) out += "  note: " + note + "\n";
  out += "\n";
}

std::string RenderText(const Report& report) {
  std::string out =
      fmt::format("tocsin {}  host={}  at={}  status={}\n\n", report.command,
                  EscapeControl(report.host),
                  FormatRfc3339(report.generated_at), StatusName(report.findings));
  Table findings{"FINDINGS", {"SEVERITY", "CHECK", "SUBJECT", "MESSAGE", "SINCE"}, {}, {}};
  for (const auto& f : report.findings) {
    findings.rows.push_back({std::string(SeverityName(f.severity)), f.check, f.subject, f.message,
                             f.since ? FormatRfc3339(*f.since) : "-"});
  }
  RenderTable(findings, out);
  for (const auto& t : report.tables) RenderTable(t, out);
  return out;
}

}  // namespace

std::optional<Severity> WorstSeverity(const std::vector<Finding>& findings) {
  std::optional<Severity> worst;
  for (const auto& f : findings) {
    if (!worst || f.severity > *worst) worst = f.severity;
  }
  return worst;
}

void SortFindings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.check != b.check) return a.check < b.check;
    return a.subject < b.subject;
  });
}

nlohmann::json ReportToJson(const Report& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings) {
    findings.push_back({{"check", f.check},
                        {"severity", SeverityName(f.severity)},
                        {"subject", f.subject},
                        {"message", f.message},
                        {"since", f.since ? nlohmann::json(FormatRfc3339(*f.since)) : nullptr},
                        {"evidence", f.evidence}});
  }
  return {{"tocsin_version", kVersion},
          {"command", report.command},
          {"host", report.host},
          {"generated_at", FormatRfc3339(report.generated_at)},
          {"status", StatusName(report.findings)},
          {"findings", std::move(findings)},
          {"inventory", report.inventory}};
}

std::string RenderReport(const Report& report, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    // Replace invalid UTF-8 (it can come from sysfs or log text) instead of throwing.
    return ReportToJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  }
  return RenderText(report);
}

int ExitCodeFor(const Report& report, Severity fail_on, bool observe_only) {
  if (observe_only) return kExitOk;
  for (const auto& f : report.findings) {
    if (f.severity >= fail_on) return kExitFindings;
  }
  return kExitOk;
}

}  // namespace tocsin
