#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/node.h"

namespace tocsin::cli {

// The expect-* and NVML flags that `tocsin node` and `tocsin agent` share.
struct NodeFlags {
  int expect_rdma_ports = 0;
  double expect_rate = 0;
  std::string expect_link_layer;
  int expect_gpus = 0;
  std::vector<std::string> expect_mounts;
  std::string nvml_library = gpu::kNvmlLibrary;
  double nvml_timeout_s = 10;

  void AddTo(CLI::App* cmd);
  // Overrides `options` with the flags given on `cmd` (so they win over a profile).
  Status Apply(const CLI::App* cmd, node::Options& options) const;
};

}  // namespace tocsin::cli
