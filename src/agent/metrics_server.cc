#include "agent/metrics_server.h"

#include <httplib.h>
#include <prometheus/text_serializer.h>

#include <chrono>

namespace tocsin::agent {

MetricsServer::MetricsServer(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)), server_(std::make_unique<httplib::Server>()) {
  scrapes_ = &prometheus::BuildCounter()
                  .Name("tocsin_agent_scrapes_total")
                  .Help("Scrapes of /metrics served by this agent.")
                  .Register(*registry_)
                  .Add({});
  scrape_seconds_ = &prometheus::BuildHistogram()
                         .Name("tocsin_agent_scrape_duration_seconds")
                         .Help("Time to render /metrics.")
                         .Register(*registry_)
                         .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.005,
                                                                          0.01, 0.05, 0.1, 0.5, 1});
}

MetricsServer::~MetricsServer() { Stop(); }

std::string MetricsServer::Render() {
  auto start = std::chrono::steady_clock::now();
  scrapes_->Increment();
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (const auto& c : collectables_) {
    auto more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  std::string text = prometheus::TextSerializer().Serialize(families);
  scrape_seconds_->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return text;
}

void MetricsServer::AddCollectable(std::shared_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(std::move(collectable));
}

Status MetricsServer::Start(const std::string& host, int port) {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    bool ready = ready_.load();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ready\n" : "not ready: the first check round has not finished\n",
                    "text/plain");
  });
  if (port == 0) {
    port_ = server_->bind_to_any_port(host);
  } else {
    port_ = server_->bind_to_port(host, port) ? port : -1;
  }
  if (port_ <= 0) {
    return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(port));
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace tocsin::agent
