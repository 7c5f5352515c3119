#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tocsin::nccl {

// nccl-tests output (all_reduce_perf and the others), old and new layouts
// (shared/reference/formats.md section 2).

struct PerfHalf {
  double time_us = 0;
  double algbw = 0;  // GB/s, GB = 1e9
  double busbw = 0;
  std::optional<int64_t> wrong;  // nullopt when printed "N/A" (-c 0)
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
  std::optional<int64_t> out_of_bounds;  // "# Out of bounds values : N OK|FAILED"

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

  std::vector<PerfRun> runs_;
  size_t rows_ = 0, devices_ = 0;  // over all runs
  uint64_t dropped_ = 0;
  bool in_table_ = false;       // a column header was seen for the current run
  bool has_timestamp_ = false;  // "-S 1": a trailing "YYYY-MM-DD HH:MM:SS"
};

// Strips launcher prefixes: "[1,0]<stdout>:", "[0] ", "[pod/x/c] ".
std::string_view StripLauncherPrefix(std::string_view line);

nlohmann::json ToJson(const PerfRun& run);

}  // namespace tocsin::nccl
