#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/report.h"
#include "base/status.h"
#include "bench/collectives.h"
#include "bench/transport.h"
#include "ranks/world.h"

namespace tocsin::bench {

struct NetBenchOptions {
  std::vector<std::string> tests = {"allreduce"};  // p2p, allreduce, allgather, alltoall
  size_t min_bytes = 1024;
  size_t max_bytes = 64 << 20;
  int factor = 2;
  int warmup = 5;
  int iters = 20;
  bool check = true;
  RingOptions ring;  // the allreduce's slices and rings
  TcpOptions tcp;    // --transport tcp: how a rank waits for its sockets
  std::string transport = "tcp";  // tcp | fabric
  std::string provider;           // libfabric provider for --transport fabric
  bool require_rdma = false;
  double min_busbw = 0;          // GB/s; 0: no threshold
  double straggler_ratio = 0.5;  // a pair below this share of the median pair is slow
  std::string bind_ip;           // default: the address that reaches the coordinator
  ranks::WorldOptions world;
  // Rank 0 only: called with HOST:PORT once the coordinator listens (--local starts the other
  // ranks from here).
  std::function<void(const std::string&)> on_coordinator;
  // Rank 0 only, with table output: lines to print as each size finishes (rank 0's own timing;
  // the report averages over ranks), before the report.
  std::function<void(const std::string&)> on_progress;
};

// The sizes a sweep visits: min, min*factor, ... up to max (nccl-tests -b/-e/-f).
std::vector<size_t> SweepSizes(size_t min_bytes, size_t max_bytes, int factor);

// Runs this rank's part of the benchmark. Every rank returns a report; rank 0's holds the
// results of all ranks (the one to print). A rank that fails, goes away or hangs ends the run on
// every rank with a `net.rank.failed` finding naming it. Usage errors are InvalidArgument.
// Findings are in SortFindings' order.
Result<Report> RunNetBench(const NetBenchOptions& options);

// Checks the options without touching the network.
Status ValidateNetBench(const NetBenchOptions& options);

}  // namespace tocsin::bench
