#pragma once

#include <string>
#include <vector>

#include "base/report.h"
#include "bench/transport.h"
#include "ranks/world.h"

namespace tocsin::bench {

// One row of a sweep, as nccl-tests prints it.
struct SweepRow {
  size_t bytes = 0;
  size_t count = 0;
  double time_us = 0;  // per iteration, averaged across ranks (nccl-tests -a 1)
  double algbw = 0;    // GB/s, GB = 1e9
  double busbw = 0;
  int64_t wrong = -1;  // -1: not checked
  double cpu_us = 0;   // CPU time (user + sys) of all ranks together per iteration
};

struct TestResult {
  std::string name;
  std::string redop;
  double factor = 1;  // busbw / algbw
  std::vector<SweepRow> rows;
  size_t slice_bytes = 0;  // allreduce: the ring's slice and ring count (0: not a ring)
  int rings = 0;
  double AvgBusBw() const;
  // CPU seconds (all ranks) per GB of bus traffic: on C cores busbw cannot exceed C / this.
  double CpuSecondsPerGb(const SweepRow& r) const;
};

// One direction of a p2p pair at one size, measured by the sender.
struct PairDirection {
  int from = -1, to = -1;
  size_t bytes = 0;
  double time_us = 0;
  double gbps() const { return time_us > 0 ? bytes / time_us / 1e3 : 0; }
};

struct PairResult {
  int a = -1, b = -1;
  double latency_us = 0;            // half the 8-byte round trip
  double ab_gbps = 0, ba_gbps = 0;  // at the largest size
  double gbps() const { return std::min(ab_gbps, ba_gbps); }
};

struct BenchOutcome {
  TransportInfo transport;
  std::vector<ranks::Peer> peers;
  std::vector<TestResult> tests;
  std::vector<PairResult> pairs;
};

// A sweep table's columns, and one row's cells, as nccl-tests prints them.
const std::vector<std::string>& SweepColumns();
std::vector<std::string> SweepCells(const std::string& redop, const SweepRow& row);

// Progress (table output): one line of `cells` in fixed right-aligned columns, as nccl-tests
// prints a row when it finishes; `comment` starts it with '#' (a header).
std::string ProgressLine(const std::vector<std::string>& cells, bool comment = false);

// The report of a finished run (rank 0): tables, inventory and findings net.busbw.low,
// net.wrong and net.link.slow.
void FillReport(const BenchOutcome& outcome, double min_busbw, double straggler_ratio,
                Report& report);

// The transport as the report's inventory shows it ("transport").
nlohmann::json TransportJson(const TransportInfo& info);

// The finding of a refused transport (net.transport.not-rdma).
Finding NotRdmaFinding(const TransportInfo& info, const std::string& subject);

}  // namespace tocsin::bench
