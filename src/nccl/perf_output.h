#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tocsin::nccl {

// nccl-tests output (all_reduce_perf and the others), old and new layouts
// (docs/FORMATS.md, "nccl-tests output").

// The check column of a half is "#wrong" (the count of wrong elements, nccl-tests 2.12+) or, in
// older versions, "error" (the largest difference from the expected value, "%5.0le": "1e-06";
// some versions mark a value beyond the type's tolerance with a trailing '*'). The header tells
// which; "N/A" when the check was off (-c 0).
struct PerfHalf {
  double time_us = 0;
  double algbw = 0;  // GB/s, GB = 1e9
  double busbw = 0;
  std::optional<int64_t> wrong;     // "#wrong"
  std::optional<double> max_error;  // "error"
  bool out_of_bounds = false;       // "error" marked '*'
};

struct PerfRow {
  uint64_t size = 0;
  uint64_t count = 0;
  std::string type;
  std::string redop;
  PerfHalf out_of_place;
  PerfHalf in_place;
};

struct PerfDevice {
  int rank = -1;
  std::string host;
  int device = -1;
  std::string name;
};

struct PerfRun {
  std::string test;  // "all_reduce_perf" ("Collective test starting"), or "" when not printed
  std::vector<PerfRow> rows;
  std::vector<PerfDevice> devices;
  std::optional<double> avg_busbw;       // "# Avg bus bandwidth : X"
  // "# Out of bounds values : N OK|FAILED": rows whose check failed (old layouts: whose error
  // exceeded the type's tolerance), the run's verdict.
  std::optional<int64_t> out_of_bounds;

  // nccl-tests' definition: mean busbw over every row, out-of-place and in-place.
  std::optional<double> ComputedAvgBusbw() const;
};

// Streaming: feed every line of a log (NCCL INFO lines and others are ignored).
class PerfParser {
 public:
  // Caps over all runs, so memory stays bounded whatever the input; what is left out is counted.
  static constexpr size_t kMaxRows = 100000;
  static constexpr size_t kMaxRuns = 1024;
  static constexpr size_t kMaxDevices = 4096;
  static constexpr size_t kMaxTextBytes = 128;  // a row's type and redop, a device's host and name

  void Feed(std::string_view line);
  const std::vector<PerfRun>& runs() const { return runs_; }
  // Rows, runs and devices left out at the caps.
  uint64_t dropped() const { return dropped_; }
  // Inside a results table every line matters (rows hold no marker to search for).
  bool in_table() const { return in_table_; }

 private:
  PerfRun& Current();
  bool ParseRow(std::string_view line);
  void NewRun();

  // What the last column header says each column of a row is.
  enum class Check { kUnknown, kWrong, kError };
  struct Columns {
    size_t time = 0;        // index of the first half's time column; 0: not found in the header
    int redop = -1;         // index of "redop", -1: none (old all_gather, broadcast)
    Check check = Check::kUnknown;
  };

  std::vector<PerfRun> runs_;
  size_t rows_ = 0, devices_ = 0;  // over all runs
  uint64_t dropped_ = 0;
  bool in_table_ = false;       // a column header was seen for the current run
  bool has_timestamp_ = false;  // "-S 1": a trailing "YYYY-MM-DD HH:MM:SS"
  Columns columns_;
};

// Strips launcher prefixes: "[1,0]<stdout>:", "[0] ", "[pod/x/c] ".
std::string_view StripLauncherPrefix(std::string_view line);

nlohmann::json ToJson(const PerfRun& run);

}  // namespace tocsin::nccl
