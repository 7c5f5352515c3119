#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "tocsin/version.h"
#include "controller/canary_runner.h"

namespace tocsin::cli {

// `tocsin controller --canary ...`: the canaries' flags.
struct CanaryFlags {
  bool enabled = false;
  std::string ns;  // default: $POD_NAMESPACE, else tocsin
  std::string image = std::string("tocsin:") + kVersion;  // the image `make image` tags
  std::vector<std::string> resources;
  std::string priority_class = "tocsin-canary";
  std::string network, queue, env_from, provider, topology_label;
  std::string expect = "rdma";
  std::string transport;  // default: fabric when RDMA is expected, else tcp
  std::vector<std::string> tests = {"p2p", "allreduce"};
  std::string min_bytes = "1M", max_bytes = "64M";
  double min_busbw = 0;
  std::string interval = "1h", pending_deadline = "2m", stale_after;
  std::string bench_timeout = "60s", active_deadline = "10m", ttl = "5m";
  size_t max_nodes = 8;
  bool no_ipc_lock = false;
  int port = 29500;

  void AddTo(CLI::App* cmd);
  // Errors name the flag. `topology_label` comes from the audit's --topology-label.
  Status Apply(controller::CanaryOptions& out, const std::string& topology_label) const;
};

}  // namespace tocsin::cli
