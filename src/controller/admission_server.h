#pragma once

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "audit/checks.h"
#include "base/status.h"
#include "https/server.h"

namespace tocsin::controller {

struct AdmissionOptions {
  std::string host;  // --admission-listen HOST:PORT
  int port = 0;
  std::string cert_file;  // --tls-cert-file (PEM chain), re-read when it changes
  std::string key_file;   // --tls-private-key-file
  std::set<std::string> deny;  // --admission-deny ID: these checks deny; the others warn
};

// The validating admission webhook (HTTPS from the module tocsin-https.so, https::StartServer:
// cpp-httplib over OpenSSL, loaded only when the webhook is on; Debian's civetweb 1.15 crashes
// on every TLS connection with OpenSSL 3): POST /validate takes an
// AdmissionReview v1 and answers with the audit's job checks (audit::CheckJobObject) over the
// job's pod templates as `warnings`, denied only for the checks in `deny`; anything that is not a
// job, or a job with an owner, is allowed silently. The certificate and key are loaded for each
// TLS handshake from memory, re-read (at most once a second) when either file changed, and kept
// when the new pair does not load or match (rotation writes them one after the other).
// Metrics on the controller's registry: tocsin_controller_admission_requests_total{result},
// tocsin_controller_admission_warnings_total{check},
// tocsin_controller_admission_duration_seconds.
class AdmissionServer {
 public:
  explicit AdmissionServer(std::shared_ptr<prometheus::Registry> registry);
  ~AdmissionServer();
  AdmissionServer(const AdmissionServer&) = delete;
  AdmissionServer& operator=(const AdmissionServer&) = delete;

  // Listens on options.host:options.port (a port must be given) and serves from a thread.
  Status Start(const AdmissionOptions& options);
  void Stop();
  int port() const { return port_; }

  // What the checks judge by: the audit's options (with the plugins' pools) and the cluster's
  // topology label; the controller sets them after each evaluation.
  void SetContext(audit::Options options, std::string topology_label);

  // The HTTP status and body /validate answers to `body` (what the handler sends).
  std::pair<int, std::string> Review(std::string_view body);

 private:
  std::shared_ptr<prometheus::Registry> registry_;  // holds the families below
  AdmissionOptions options_;
  std::mutex mu_;
  audit::Options audit_;
  std::string topology_;
  std::unique_ptr<https::Server> server_;
  int port_ = 0;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Counter>* warnings_ = nullptr;
  prometheus::Histogram* seconds_ = nullptr;
};

}  // namespace tocsin::controller
