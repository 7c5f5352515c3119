#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "agent/scheduler.h"
#include "base/finding.h"
#include "base/time.h"

namespace tocsin::agent {

// Thresholds of node.fabric.idle-while-tcp-busy: the silent fallback of NCCL to sockets shows as
// RDMA ports that stay idle while the node's Ethernet interfaces carry the job's traffic.
struct FabricOptions {
  double rdma_idle_below_bps = 1e6;   // RDMA data (rx + tx, all active ports) below this is idle
  double tcp_busy_above_bps = 100e6;  // Ethernet rx + tx above this is busy
  std::chrono::seconds sustain{60};   // for at least this long
};

// One reading of the counters.
struct FabricSample {
  std::chrono::steady_clock::time_point at;
  TimePoint wall;
  int active_rdma_ports = 0;
  std::optional<uint64_t> rdma_bytes;  // sum of rx + tx data bytes of active ports
  uint64_t ethernet_bytes = 0;         // sum of rx + tx bytes of physical Ethernet netdevs
};

// Pure: turns successive samples into rates and the verdict. Counters that went backwards (a
// driver reload) give no rate for that interval.
class FabricWatch {
 public:
  explicit FabricWatch(FabricOptions options) : options_(options) {}

  struct Verdict {
    std::optional<double> rdma_bps, ethernet_bps;  // nullopt before two samples
    std::optional<Finding> finding;                // the condition held for `sustain`
  };
  Verdict Add(const FabricSample& sample);

 private:
  FabricOptions options_;
  std::optional<FabricSample> last_;
  std::optional<TimePoint> since_;  // when the idle-while-busy interval began
};

// The `fabric` task: reads RDMA data counters and netdev statistics, exports both rates and the
// netdev byte counters, decides node.fabric.idle-while-tcp-busy.
TaskSpec FabricTask(const std::string& root, FabricOptions options);

}  // namespace tocsin::agent
