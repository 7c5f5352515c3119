#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "base/status.h"
#include "base/time.h"
#include "k8s/kubeconfig.h"

namespace tocsin::k8s {

// What an exec credential plugin returned (ExecCredential.status).
struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<TimePoint> expires;
};

// Decodes a plugin's stdout: an ExecCredential of `api_version` with a token or a client
// certificate and key. Pure function of the text; errors name the plugin.
Result<ExecCredential> ParseExecCredential(const std::string& text, const std::string& api_version,
                                           const std::string& plugin);

// Runs the plugin as kubectl does (KUBERNETES_EXEC_INFO with interactive=false, and the
// cluster's server and CA when provideClusterInfo is set), bounded by `timeout`, and killed
// within about 100 ms once `*stop` turns true (nullptr: never). A failing plugin's error names it
// and quotes its stderr.
Result<ExecCredential> RunExecPlugin(const ExecConfig& exec, const ClusterAccess& cluster,
                                     std::chrono::milliseconds timeout,
                                     const std::atomic<bool>* stop = nullptr);

}  // namespace tocsin::k8s
