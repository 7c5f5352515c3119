#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/finding.h"
#include "base/time.h"

namespace tocsin {

// Process exit codes shared by every command.
enum ExitCode : int {
  kExitOk = 0,        // no finding at or above --fail-on
  kExitFindings = 1,  // at least one finding at or above --fail-on
  kExitUsage = 2,     // bad flag, profile or input file
  kExitInternal = 3,  // a bug
};

// kJsonLine: the JSON on one line (JSON Lines, for a report that ends a stream of events).
enum class OutputFormat { kTable, kJson, kJsonLine };

// A table for people: one section of the `-o table` output.
struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // printed under the table
};

// The one result struct every command fills. `inventory` is what `-o json` prints; `tables` is
// the same inventory laid out for `-o table`.
// The order findings are reported in, defined once (SortFindings).
//   kBySeverity: severity (worst first), then check id, then subject.
//   kBySubject: grouped by subject, the groups by their worst severity, then their oldest onset,
//     then subject; inside a group by severity, then onset (oldest first; unknown onsets last).
enum class FindingOrder { kBySeverity, kBySubject };

struct Report {
  std::string command;
  std::string host;
  TimePoint generated_at;
  std::vector<Finding> findings;
  nlohmann::json inventory = nlohmann::json::object();
  std::vector<Table> tables;
  FindingOrder order = FindingOrder::kBySeverity;  // the renderers print findings in this order
};

std::optional<Severity> WorstSeverity(const std::vector<Finding>& findings);

// The one sort of findings (stable).
void SortFindings(std::vector<Finding>& findings, FindingOrder order = FindingOrder::kBySeverity);

// {"tocsin_version","command","host","generated_at","status","findings":[...],"inventory":{...}}
// By value: a caller done with its report moves it in, and its inventory is not copied.
nlohmann::json ReportToJson(Report report);
// Tables wider than `width` columns wrap their widest column (`-o table`: the terminal's width,
// or kTableWidth when the output is not a terminal).
constexpr size_t kTableWidth = 100;
std::string RenderReport(Report report, OutputFormat format, size_t width = kTableWidth);

// 0 when no finding is at or above fail_on (or observe_only), else 1.
int ExitCodeFor(const Report& report, Severity fail_on, bool observe_only);

}  // namespace tocsin
