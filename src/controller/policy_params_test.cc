#include "controller/policy_params.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "testing/status_matchers.h"

namespace tocsin::controller {
namespace {

using nlohmann::json;

// The API server's side of one ConfigMap: PATCHes recorded, answered with `status`.
class ConfigMapServer {
 public:
  ConfigMapServer() {
    server_.Patch("/api/v1/namespaces/tocsin/configmaps/tocsin-policy-params",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    std::lock_guard<std::mutex> l(mu_);
                    patches_.push_back({req.get_header_value("Content-Type"), req.body});
                    res.status = status_;
                    res.set_content(status_ == 200 ? R"({"kind":"ConfigMap"})"
                                                   : R"({"kind":"Status","message":"no"})",
                                    "application/json");
                  });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ConfigMapServer() {
    server_.stop();
    thread_.join();
  }
  void Answer(int status) {
    std::lock_guard<std::mutex> l(mu_);
    status_ = status;
  }
  std::vector<std::pair<std::string, std::string>> patches() {
    std::lock_guard<std::mutex> l(mu_);
    return patches_;
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  std::mutex mu_;
  int status_ = 200;
  std::vector<std::pair<std::string, std::string>> patches_;
  int port_ = 0;
};

double Value(prometheus::Registry& r, const std::string& name, const std::string& result = "") {
  for (const auto& family : r.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      if (!result.empty() && (m.label.empty() || m.label[0].value != result)) continue;
      return family.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
    }
  }
  return -1;
}

TEST(PolicyParamsWriterTest, PatchesOnlyWhenTheParamsChangeAndRetriesAFailureLater) {
  ConfigMapServer server;
  k8s::ClusterAccess access;
  access.origin = "test";
  access.server = "http://127.0.0.1:" + std::to_string(server.port());
  k8s::ClientOptions co;
  co.attempts = 1;
  auto client = k8s::ApiClient::Create(access, co);
  ASSERT_OK(client);
  prometheus::Registry registry;
  PolicyParamsWriter w({.ns = "tocsin", .name = "tocsin-policy-params"}, registry);
  EXPECT_EQ(Value(registry, "tocsin_controller_policy_params_synced"), 0);

  policy::Params p;
  p.advertised_rdma_resources = {"rdma/hca_shared_devices_a"};
  p.topology_label = "topology.kubernetes.io/zone";
  TimePoint t0 = FromUnixSeconds(1800000000);
  EXPECT_EQ(w.Publish(p, **client, t0), "");
  ASSERT_EQ(server.patches().size(), 1u);
  EXPECT_EQ(server.patches()[0].first, "application/merge-patch+json");
  json body = json::parse(server.patches()[0].second);
  EXPECT_EQ(body["data"]["advertisedRdmaResources"], "rdma/hca_shared_devices_a");
  EXPECT_EQ(body["data"]["topologyLabel"], "topology.kubernetes.io/zone");
  EXPECT_EQ(body["data"]["ipcLockNeeded"], "true");
  EXPECT_EQ(body["data"], policy::ParamsData(p));  // the same data `tocsin policy` writes
  EXPECT_EQ(Value(registry, "tocsin_controller_policy_params_synced"), 1);

  // Unchanged: no request, until the reassert interval (a hand edit is put right).
  EXPECT_EQ(w.Publish(p, **client, t0 + std::chrono::seconds(1)), "");
  EXPECT_EQ(server.patches().size(), 1u);
  t0 += std::chrono::minutes(5);
  EXPECT_EQ(w.Publish(p, **client, t0), "");
  ASSERT_EQ(server.patches().size(), 2u);
  EXPECT_EQ(server.patches()[1].second, server.patches()[0].second);

  // The cluster now advertises another resource; the ConfigMap is gone: a clear error, once.
  server.Answer(404);
  p.advertised_rdma_resources.push_back("rdma/hca_shared_devices_b");
  std::string e = w.Publish(p, **client, t0 + std::chrono::seconds(2));
  EXPECT_NE(e.find("tocsin/tocsin-policy-params does not exist"), std::string::npos) << e;
  EXPECT_EQ(Value(registry, "tocsin_controller_policy_params_synced"), 0);
  EXPECT_EQ(Value(registry, "tocsin_controller_policy_params_writes_total", "error"), 1);
  // Not again before the retry interval; then tried, failing the same way: not logged again.
  EXPECT_EQ(w.Publish(p, **client, t0 + std::chrono::seconds(20)), "");
  EXPECT_EQ(server.patches().size(), 3u);
  EXPECT_EQ(w.Publish(p, **client, t0 + std::chrono::seconds(33)), "");
  EXPECT_EQ(server.patches().size(), 4u);
  // Forbidden names the RBAC that grants it.
  server.Answer(403);
  e = w.Publish(p, **client, t0 + std::chrono::seconds(64));
  EXPECT_NE(e.find("deploy/components/policy-params"), std::string::npos) << e;
  // Back: written, synced.
  server.Answer(200);
  EXPECT_EQ(w.Publish(p, **client, t0 + std::chrono::seconds(95)), "");
  EXPECT_EQ(server.patches().size(), 6u);
  EXPECT_EQ(json::parse(server.patches()[5].second)["data"]["advertisedRdmaResources"],
            "rdma/hca_shared_devices_a,rdma/hca_shared_devices_b");
  EXPECT_EQ(Value(registry, "tocsin_controller_policy_params_synced"), 1);
  EXPECT_EQ(Value(registry, "tocsin_controller_policy_params_writes_total", "ok"), 3);
}

}  // namespace
}  // namespace tocsin::controller
