#include "agent/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <prometheus/gauge.h>

#include <cstdio>
#include <fstream>

#include "sys/subprocess.h"

namespace tocsin::agent {
namespace {

TEST(MetricsServerTest, ServesMetricsHealthAndReadiness) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& up = prometheus::BuildGauge()
                 .Name("tocsin_rdma_port_up")
                 .Help("1 when the RDMA port is ACTIVE.")
                 .Register(*registry);
  up.Add({{"device", "mlx5_0"}, {"port", "1"}}).Set(1);
  MetricsServer server(registry);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  server.SetReady(true);
  EXPECT_EQ(client.Get("/readyz")->status, 200);
  EXPECT_EQ(client.Get("/healthz")->status, 200);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("tocsin_rdma_port_up{device=\"mlx5_0\",port=\"1\"} 1"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("tocsin_agent_scrapes_total 1"), std::string::npos);
  server.Stop();
}

// promtool (Prometheus' own linter) must accept the exposition.
TEST(MetricsServerTest, PromtoolAcceptsTheExposition) {
  auto registry = std::make_shared<prometheus::Registry>();
  MetricsServer server(registry);
  std::string path = "/tmp/tocsin-metrics-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << server.Render();
  auto r = sys::RunProcess({"sh", "-c", "promtool check metrics < " + path});
  std::remove(path.c_str());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
}

}  // namespace
}  // namespace tocsin::agent
