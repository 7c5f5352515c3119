#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "base/status.h"
#include "k8s/api_client.h"

namespace tocsin::cli {

// How a command reads a live cluster (audit, snapshot, diff): --kubeconfig, --request-timeout,
// --chunk-size. The context is the command's own (--context, ctx:NAME, --context-a/-b).
struct LiveFlags {
  std::string kubeconfig;
  double request_timeout_s = 30;
  int64_t chunk_size = 500;

  void AddTo(CLI::App* cmd);
  Status Check() const;
};

using LiveLoader = std::function<Status(k8s::ApiClient& client, k8s::Snapshot& out)>;

// Connects to `context` (empty: the current one) and runs `load`. Errors (credentials, TLS,
// HTTP, decoding) are printed naming the server; the exit code: 0, 2 (input) or 3 (internal).
int LoadLive(const LiveFlags& flags, const std::string& context, const LiveLoader& load,
             k8s::Snapshot& out);

}  // namespace tocsin::cli
