#pragma once

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace httplib {
class Server;
}

namespace tocsin::agent {

// Serves a Prometheus registry in the text exposition format on /metrics (with its own
// tocsin_agent_scrapes_total and tocsin_agent_scrape_duration_seconds), /healthz (the process
// answers) and /readyz (200 once SetReady(true), 503 before). The agent's HTTP seam (issue 7).
class MetricsServer {
 public:
  explicit MetricsServer(std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Also renders `collectable` on every scrape, after the registry (call before Start).
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Listens on host:port (port 0: any free port; port() says which) and serves from a thread.
  Status Start(const std::string& host, int port);
  int port() const { return port_; }
  void SetReady(bool ready) { ready_.store(ready); }
  // Stops accepting and joins the serving thread.
  void Stop();

  // The text exposition of the registry (what /metrics returns).
  std::string Render();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> ready_{false};
  int port_ = 0;
  prometheus::Counter* scrapes_ = nullptr;
  prometheus::Histogram* scrape_seconds_ = nullptr;
};

}  // namespace tocsin::agent
