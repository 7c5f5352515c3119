#include "agent/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "sys/subprocess.h"
#include "testing/status_matchers.h"

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

// The agent's and the controller's --listen on a port another process holds: the message names
// the cause, not only that it failed.
TEST(MetricsServerTest, APortInUseIsNamed) {
  int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int port = ntohs(addr.sin_port);
  MetricsServer server(std::make_shared<prometheus::Registry>());
  Status st = server.Start("127.0.0.1", port);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "cannot listen on 127.0.0.1:" + std::to_string(port) +
                              ": address already in use (another process listens there)");
  close(holder);
  Status bad = MetricsServer(std::make_shared<prometheus::Registry>()).Start("203.0.113.7", port);
  ASSERT_FALSE(bad.ok());  // not an address of this host
  EXPECT_NE(bad.message().find("Cannot assign requested address"), std::string::npos)
      << bad.message();
}

// promtool (Prometheus' own linter) must accept the exposition: every metric type, and label
// values that need escaping (a subject can hold quotes, backslashes and newlines).
TEST(MetricsServerTest, PromtoolAcceptsTheExposition) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge()
      .Name("tocsin_test_level")
      .Help("A gauge.")
      .Register(*registry)
      .Add({{"subject", "a \"quoted\" \\ path\nand a line"}})
      .Set(1);
  prometheus::BuildCounter().Name("tocsin_test_total").Help("A counter.").Register(*registry).Add({}).Increment();
  prometheus::BuildHistogram()
      .Name("tocsin_test_seconds")
      .Help("A histogram.")
      .Register(*registry)
      .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 1})
      .Observe(0.5);
  MetricsServer server(registry);
  std::string text = server.Render();
  for (const char* name : {"tocsin_test_level{", "tocsin_test_total ", "tocsin_test_seconds_bucket{"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name << " missing from\n" << text;
  }
  std::string path = "/tmp/tocsin-metrics-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << text;
  auto r = sys::RunProcess({"sh", "-c", "promtool check metrics < " + path});
  std::remove(path.c_str());
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
}

// Connections to the server that never send a request (or stop half-way through one).
std::vector<int> IdleConnections(int port, int n, const std::string& partial = "") {
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    if (!partial.empty()) {
      EXPECT_GT(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL), 0);
    }
    fds.push_back(fd);
  }
  return fds;
}

// Issue 13: six idle connections held /healthz down for 10 s (4 workers, each kept by a
// connection until its request timeout): liveness probes failed and the pod restarted. With
// connections held idle, silent or slow, /healthz still answers within a probe's timeout.
TEST(MetricsServerTest, IdleConnectionsDoNotHoldHealthzDown) {
  MetricsServer server(std::make_shared<prometheus::Registry>());
  ASSERT_TRUE(server.Start("127.0.0.1", 0).ok());
  std::vector<int> idle = IdleConnections(server.port(), 8);
  std::vector<int> slow = IdleConnections(server.port(), 4, "GET /metrics HTTP/1.1\r\nHost: x");
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health) << "no answer within 5 s";
  EXPECT_EQ(health->status, 200);

  // More idle connections than workers: each is dropped after the 2 s header timeout, so /healthz
  // waits for one round of them at most (10 s before: a request timeout per round of 4).
  std::vector<int> more = IdleConnections(server.port(), 16);
  httplib::Client later("127.0.0.1", server.port());
  later.set_read_timeout(8, 0);
  auto again = later.Get("/healthz");
  ASSERT_TRUE(again) << "no answer within 8 s";
  EXPECT_EQ(again->status, 200);
  for (const auto* fds : {&idle, &slow, &more}) {
    for (int fd : *fds) ::close(fd);
  }
  server.Stop();
}

}  // namespace
}  // namespace tocsin::agent
