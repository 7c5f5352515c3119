#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/report.h"
#include "gpu/inventory.h"
#include "net/netdev.h"
#include "node/affinity.h"
#include "node/expectations.h"
#include "rdma/inventory.h"
#include "storage/inventory.h"
#include "sys/env.h"

namespace tocsin::node {

struct Options {
  Expectations expect;
  // NVML is asked only about the real host: when --root is "/" or a library is named.
  std::string nvml_library = gpu::kNvmlLibrary;
  bool nvml_library_explicit = false;
  std::chrono::milliseconds nvml_timeout{10000};
};

// Everything `tocsin node` reads. The agent reuses Collect and Check on its own schedule.
struct Inventory {
  std::string host;
  rdma::Scan rdma;
  net::Scan net;
  gpu::Scan gpus;
  storage::Scan storage;
  std::vector<GpuAffinity> affinity;
};

Inventory Collect(Env& env, const Options& options);
std::vector<Finding> Check(const Inventory& inv, const Expectations& expect);

// Collect + Check, laid out in the report contract (JSON inventory and tables).
Report BuildReport(Env& env, const Options& options);

// The tables of `-o table` (render.cc).
std::vector<Table> InventoryTables(const Inventory& inv);

}  // namespace tocsin::node
