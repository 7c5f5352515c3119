// The end-to-end test: a real Prometheus scrapes three agents, each in its own network
// namespace ("node") with its own fixture root, and a PromQL query through Prometheus's HTTP
// API finds the node whose RDMA port is down. Everything stays inside namespaces we made.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "agent_process.h"
#include "run_binary.h"
#include "testing/skip.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::AgentProcess;
using testing::Process;
using testing::RunBinary;
using testing::RunResult;
using testing::TempDir;

const std::string kSource = TOCSIN_SOURCE_DIR;

class AgentPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prefix_ = "tap" + std::to_string(getpid() % 100000);
    script_ = kSource + "/tests/integration/netns.sh";
    RunResult up = RunBinary("bash", {script_, "up", prefix_});
    if (up.exit_code != 0) {
      RunBinary("bash", {script_, "down", prefix_});
      TOCSIN_SKIP() << "cannot make network namespaces here: " << up.err;
    }
    ready_ = true;
    dir_ = TempDir("agent-prom");
  }
  void TearDown() override {
    if (ready_) RunBinary("bash", {script_, "down", prefix_});
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::vector<std::string> Netns(int i) {
    return {"ip", "netns", "exec", prefix_ + std::to_string(i)};
  }

  // GET on Prometheus from inside node 4's namespace (Prometheus listens there).
  json Query(const std::string& path) {
    std::vector<std::string> argv = Netns(4);
    argv.insert(argv.end(), {"python3", "-c",
                             "import sys,urllib.request as u;"
                             "print(u.urlopen('http://10.77.0.4:9090'+sys.argv[1],timeout=5)"
                             ".read().decode())",
                             path});
    RunResult r = RunBinary(argv[0], {argv.begin() + 1, argv.end()});
    return json::parse(r.out, nullptr, false);
  }
  // Instances of a PromQL query's vector result, polled until `want` of them (30 s bound).
  std::set<std::string> Instances(const std::string& promql, size_t want) {
    std::string encoded;
    for (char c : promql) {
      if (isalnum(static_cast<unsigned char>(c)) || c == '_') {
        encoded += c;
      } else {
        char buf[4];
        snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
        encoded += buf;
      }
    }
    std::set<std::string> out;
    for (int i = 0; i < 300; ++i) {
      json r = Query("/api/v1/query?query=" + encoded);
      out.clear();
      if (r.is_object() && r["status"] == "success") {
        for (const auto& s : r["data"]["result"]) out.insert(s["metric"]["node"]);
      }
      if (out.size() == want) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling Prometheus
    }
    return out;
  }

  std::string prefix_, script_, dir_;
  bool ready_ = false;
};

TEST_F(AgentPrometheusTest, PromQlFindsTheNodeWithThePortDown) {
  const std::vector<std::pair<std::string, std::string>> nodes = {
      {"ib-healthy", "node-a"}, {"ib-port-down", "node-b"}, {"roce", "node-c"}};
  std::vector<std::unique_ptr<AgentProcess>> agents;
  std::ofstream cfg(dir_ + "/prometheus.yml");
  cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
      << "scrape_configs:\n- job_name: tocsin-agent\n  static_configs:\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string ip = "10.77.0." + std::to_string(i + 1);
    agents.push_back(std::make_unique<AgentProcess>(
        std::vector<std::string>{"--no-kube", "--root",
                                 kSource + "/testdata/nodes/" + nodes[i].first, "--listen",
                                 ip + ":9464"},
        std::vector<std::string>{}, Netns(static_cast<int>(i + 1))));
    ASSERT_GT(agents.back()->port(), 0) << agents.back()->err();
    cfg << "  - targets: ['" << ip << ":9464']\n    labels: {node: " << nodes[i].second << "}\n";
  }
  cfg.close();
  std::vector<std::string> argv = Netns(4);
  argv.insert(argv.end(), {"prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                           "--storage.tsdb.path=" + dir_ + "/data",
                           "--web.listen-address=10.77.0.4:9090", "--log.level=warn"});
  Process prometheus(argv);

  EXPECT_EQ(Instances("up == 1", 3).size(), 3u) << "Prometheus did not scrape all three agents";
  EXPECT_EQ(Instances("tocsin_rdma_port_up == 0", 1), std::set<std::string>{"node-b"});
  EXPECT_EQ(Instances("tocsin_check_status{check=\"rdma.port.down\"} == 0", 1),
            std::set<std::string>{"node-b"});
  EXPECT_EQ(
      Instances("tocsin_node_condition{condition=\"RDMAFabricDegraded\",status=\"True\"} == 1", 1),
      std::set<std::string>{"node-b"});
  EXPECT_EQ(Instances("count by (node) (tocsin_rdma_port_up) == 4", 2),
            (std::set<std::string>{"node-a", "node-b"}));
  for (auto& a : agents) a->Signal(SIGTERM);
  for (auto& a : agents) EXPECT_EQ(a->Wait().exit_code, 0);
}

}  // namespace
}  // namespace tocsin
