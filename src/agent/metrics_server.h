#pragma once

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

struct mg_context;
struct mg_connection;

namespace tocsin::agent {

// Serves a Prometheus registry in the text exposition format on /metrics (with its own
// tocsin_agent_scrapes_total and tocsin_agent_scrape_duration_seconds), /healthz (the process
// answers) and /readyz (200 once SetReady(true), 503 before), over civetweb: keep-alive,
// TCP_NODELAY, 16 workers, and connections that send no complete request within 2 s (or idle 5 s
// between requests) closed, so idle connections cannot hold /healthz down. (cpp-httplib as Debian
// builds it initialises OpenSSL when loaded, which costs the agent 4 MiB of RSS for nothing.)
class MetricsServer {
 public:
  // `daemon` names its own metrics (tocsin_<daemon>_scrapes_total); `not_ready` is what /readyz
  // says before SetReady(true).
  explicit MetricsServer(std::shared_ptr<prometheus::Registry> registry,
                         std::string daemon = "agent",
                         std::string not_ready = "the first check round has not finished");
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Also renders `collectable` on every scrape, after the registry (call before Start).
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Listens on host:port (port 0: any free port; port() says which) and serves from a thread.
  Status Start(const std::string& host, int port);
  int port() const { return port_; }
  void SetReady(bool ready) { ready_.store(ready); }
  // Stops accepting and joins the serving threads.
  void Stop();

  // The text exposition of the registry (what /metrics returns).
  std::string Render();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  static int Handle(mg_connection* conn, void* self);

  mg_context* ctx_ = nullptr;
  std::string host_;
  std::string not_ready_;
  std::atomic<bool> ready_{false};
  int port_ = 0;
  prometheus::Counter* scrapes_ = nullptr;
  prometheus::Histogram* scrape_seconds_ = nullptr;
};

}  // namespace tocsin::agent
