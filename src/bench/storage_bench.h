#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "base/report.h"
#include "base/status.h"
#include "bench/storage_probe.h"
#include "ranks/world.h"

namespace tocsin::bench {

struct StorageBenchOptions {
  std::string path;  // a writable directory on the filesystem to probe
  ProbeOptions probe;
  std::vector<std::string> phases = {"write", "read", "randread", "fsync", "meta"};
  double min_read_gbps = 0, min_write_gbps = 0;
  double max_fsync_p99_ms = 0, max_meta_p99_ms = 0;
  double straggler_ratio = 0.5;  // a node below this share of the median node is slow
  bool distributed = false;      // ranks on several nodes against one shared path
  ranks::WorldOptions world;
  std::function<void(const std::string&)> on_coordinator;
  // Rank 0 only, with table output: lines to print as each phase finishes, before the report.
  std::function<void(const std::string&)> on_progress;
  std::atomic<bool>* interrupted = nullptr;  // Ctrl-C: stop, clean up, report
  // Called with the run's folder when the ranks' rendezvous begins (a wait on other ranks that
  // `interrupted` cannot cut short) and with "" when it ends: the CLI stops at once on a signal
  // meanwhile, removing that (still empty) folder.
  std::function<void(const std::string&)> on_rendezvous;
};

struct StorageBenchResult {
  Report report;
  // The filesystem stopped answering: worker threads may be stuck in the kernel, so the caller
  // must exit without joining them (std::_Exit after printing).
  bool hung = false;
  bool interrupted = false;
};

// Checks `--path` and the options; InvalidArgument names what is wrong.
Status ValidateStorageBench(const StorageBenchOptions& options);

// Runs this rank's probe (and, distributed, gathers every rank's results on every rank). Usage
// errors and a failing probe are errors; a hung filesystem, a signal or a failed rank give a
// report that says so. Findings are in SortFindings' order.
Result<StorageBenchResult> RunStorageBench(const StorageBenchOptions& options);

}  // namespace tocsin::bench
