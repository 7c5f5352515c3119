#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "audit/checks.h"
#include "base/status.h"

namespace tocsin::cli {

// A non-zero duration flag ("500ms", "15s", "2m"); the error names the flag.
Status ParseDurationFlag(const std::string& flag, const std::string& text,
                         std::chrono::milliseconds& out);

// --listen HOST:PORT (port 0: any; "[::]:9464" for IPv6; ":9464" for every interface).
Status ParseListen(const std::string& text, std::string& host, int& port);

// The flags that choose what the cluster checks treat as the fabric: `tocsin audit` and
// `tocsin controller` take the same ones.
struct AuditCheckFlags {
  std::vector<std::string> device_plugins;
  std::string fabric_nodes;
  std::vector<std::string> rdma_resources;
  std::string fabric_network;
  std::string topology_label;
  bool ipc_lock_not_needed = false;

  void AddTo(CLI::App* cmd);
  // Into `options` (now and plugin_config are left alone); errors name the flag.
  Status Apply(audit::Options& options) const;
};

}  // namespace tocsin::cli
