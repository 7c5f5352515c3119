#include "base/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "base/strings.h"
#include "tocsin/version.h"

namespace tocsin {
namespace {

constexpr size_t kMinWrapWidth = 24;  // a wrapped column is never narrower

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

// The first `cols` terminal columns of `s` (whole UTF-8 characters).
size_t PrefixBytes(const std::string& s, size_t cols) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == cols) return i;
  }
  return s.size();
}

// `s` in lines of at most `width` columns, broken at spaces; a longer word is cut.
std::vector<std::string> WrapText(const std::string& s, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  bool fresh = true;  // nothing placed on `line` yet
  for (size_t start = 0; start <= s.size();) {
    size_t end = std::min(s.find(' ', start), s.size());
    std::string word = s.substr(start, end - start);
    start = end + 1;
    if (!fresh && DisplayWidth(line) + 1 + DisplayWidth(word) > width) {
      lines.push_back(line);
      line.clear();
      fresh = true;
    }
    if (!fresh) line += ' ';
    while (DisplayWidth(word) > width) {  // on a fresh line: longer than any line
      size_t cut = PrefixBytes(word, width);
      lines.push_back(word.substr(0, cut));
      word = word.substr(cut);
    }
    line += word;
    fresh = false;
  }
  lines.push_back(line);
  return lines;
}

void RenderTable(const Table& raw, size_t max_width, std::string& out) {
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
    // A row wider than the terminal wraps its widest column (a finding's message, most often)
    // onto lines of its own under the row; the other columns keep their place.
    size_t total = 0;
    for (size_t w : widths) total += w + 2;
    size_t wrap = widths.size();
    if (total > max_width) {
      wrap = static_cast<size_t>(std::max_element(widths.begin(), widths.end()) - widths.begin());
      size_t others = total - widths[wrap];
      size_t fit = max_width > others + kMinWrapWidth ? max_width - others : kMinWrapWidth;
      widths[wrap] = std::max(std::min(widths[wrap], fit), DisplayWidth(table.columns[wrap]));
    }
    auto one_line = [&](const std::vector<std::string>& cells) {
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
    auto line = [&](const std::vector<std::string>& cells) {
      if (wrap >= cells.size()) return one_line(cells);
      std::vector<std::string> parts = WrapText(cells[wrap], widths[wrap]);
      std::vector<std::string> row = cells;
      for (size_t k = 0; k < parts.size(); ++k) {
        if (k == 1) row.assign(widths.size(), "");  // continuation: the wrapped column only
        row[wrap] = parts[k];
        one_line(row);
      }
    };
    line(table.columns);
    for (const auto& row : table.rows) line(row);
  }
  for (const auto& note : table.notes) {
    std::string lead = "  note: ";
    for (const auto& part : WrapText(note, max_width > 32 ? max_width - 8 : kMinWrapWidth)) {
      out += lead + part + "\n";
      lead = "        ";
    }
  }
  out += "\n";
}

// The findings in the report's order: every rendering sorts here, whatever filled the report.
std::vector<Finding> Sorted(const Report& report) {
  std::vector<Finding> findings = report.findings;
  SortFindings(findings, report.order);
  return findings;
}

std::string RenderText(const Report& report, size_t width) {
  std::string out =
      fmt::format("tocsin {}  host={}  at={}  status={}\n\n", report.command,
                  EscapeControl(report.host),
                  FormatRfc3339(report.generated_at), StatusName(report.findings));
  Table findings{"FINDINGS", {"SEVERITY", "CHECK", "SUBJECT", "MESSAGE", "SINCE"}, {}, {}};
  for (const auto& f : Sorted(report)) {
    findings.rows.push_back({std::string(SeverityName(f.severity)), f.check, f.subject, f.message,
                             f.since ? FormatRfc3339(*f.since) : "-"});
  }
  RenderTable(findings, width, out);
  for (const auto& t : report.tables) RenderTable(t, width, out);
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

void SortFindings(std::vector<Finding>& findings, FindingOrder order) {
  if (order == FindingOrder::kBySeverity) {
    std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
      if (a.severity != b.severity) return a.severity > b.severity;
      if (a.check != b.check) return a.check < b.check;
      return a.subject < b.subject;
    });
    return;
  }
  struct Group {
    Severity worst = Severity::kInfo;
    std::optional<TimePoint> oldest;
  };
  auto older = [](const std::optional<TimePoint>& a, const std::optional<TimePoint>& b) {
    if (a.has_value() != b.has_value()) return a.has_value();
    return a && b && *a < *b;
  };
  std::map<std::string, Group> groups;
  for (const auto& f : findings) {
    Group& g = groups[f.subject];
    g.worst = std::max(g.worst, f.severity);
    if (f.since && (!g.oldest || *f.since < *g.oldest)) g.oldest = f.since;
  }
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    const Group& ga = groups.at(a.subject);
    const Group& gb = groups.at(b.subject);
    if (ga.worst != gb.worst) return ga.worst > gb.worst;
    if (ga.oldest != gb.oldest) return older(ga.oldest, gb.oldest);
    if (a.subject != b.subject) return a.subject < b.subject;
    if (a.severity != b.severity) return a.severity > b.severity;
    return older(a.since, b.since);
  });
}

nlohmann::json ReportToJson(Report report) {
  std::string status = StatusName(report.findings);
  SortFindings(report.findings, report.order);  // as Sorted, in place: the report is ours
  nlohmann::json findings = nlohmann::json::array();
  for (auto& f : report.findings) {
    findings.push_back({{"check", f.check},
                        {"severity", SeverityName(f.severity)},
                        {"subject", f.subject},
                        {"message", f.message},
                        {"since", f.since ? nlohmann::json(FormatRfc3339(*f.since)) : nullptr},
                        {"evidence", std::move(f.evidence)}});
  }
  return {{"tocsin_version", kVersion},
          {"command", report.command},
          {"host", report.host},
          {"generated_at", FormatRfc3339(report.generated_at)},
          {"status", std::move(status)},
          {"findings", std::move(findings)},
          {"inventory", std::move(report.inventory)}};
}

std::string RenderReport(Report report, OutputFormat format, size_t width) {
  if (format != OutputFormat::kTable) {
    // Replace invalid UTF-8 (it can come from sysfs or log text) instead of throwing.
    return ReportToJson(std::move(report)).dump(format == OutputFormat::kJson ? 2 : -1, ' ', false,
                                     nlohmann::json::error_handler_t::replace) +
           "\n";
  }
  return RenderText(report, width);
}

int ExitCodeFor(const Report& report, Severity fail_on, bool observe_only) {
  if (observe_only) return kExitOk;
  for (const auto& f : report.findings) {
    if (f.severity >= fail_on) return kExitFindings;
  }
  return kExitOk;
}

}  // namespace tocsin
