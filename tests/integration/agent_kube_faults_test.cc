// `tocsin agent` when its API server misbehaves (tests/k8s_api/server.py's faults): a server
// that never answers, and a projected token the kubelet rotates under the agent.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent_process.h"
#include "run_binary.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AgentProcess;
using testing::MetricValue;
using testing::RunResult;
using testing::Server;
using testing::TempDir;

const std::string kSource = TOCSIN_SOURCE_DIR;
const std::string kNodes = kSource + "/testdata/nodes/";
const std::string kApi = kSource + "/tests/k8s_api/";

// An API server that does not answer: the agent keeps serving, says it is not connected, and
// still stops within a second of SIGTERM (the Kubernetes exchange has its own thread).
TEST(AgentKubeHangTest, AHungApiServerDelaysNeitherMetricsNorShutdown) {
  std::string dir = TempDir("agent-kube-hang");
  Server server({"python3", kApi + "server.py", "--max-seconds", "60", "--snapshot",
                 kSource + "/testdata/clusters/healthy.json", "--hang", "nodes", "--hang-seconds",
                 "50"});
  ASSERT_GT(server.port(), 0);
  std::ofstream(dir + "/kubeconfig") << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                                     << "clusters:\n- name: t\n  cluster:\n    server: "
                                     << "http://127.0.0.1:" << server.port() << "\n"
                                     << "contexts:\n- name: t\n  context: {cluster: t, user: u}\n"
                                     << "users:\n- name: u\n  user: {}\n";
  AgentProcess a({"--root", kNodes + "ib-healthy", "--listen", "127.0.0.1:0", "--kubeconfig",
                  dir + "/kubeconfig", "--node-name", "gpu-node-01", "--reconcile", "100ms",
                  "--request-timeout", "40s"},
                 {"KUBECONFIG="});
  ASSERT_GT(a.port(), 0) << a.err();
  std::string text;
  ASSERT_TRUE(a.WaitForMetrics(
      [](const std::string& t) {
        return MetricValue(t,
                           "tocsin_node_condition{condition=\"RDMAFabricDegraded\","
                           "status=\"False\"}") == 1;
      },
      seconds(15), &text))
      << text << a.err();
  EXPECT_EQ(MetricValue(text, "tocsin_agent_kube_connected"), 0);
  auto start = std::chrono::steady_clock::now();
  a.Signal(SIGTERM);
  RunResult r = a.Wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  fs::remove_all(dir);
}

// Issue 13: the agent read its token file once; after the kubelet rotated it, every request was a
// 401 and conditions silently stopped. A server that accepts only the token its file holds now:
// the rotated token is read again (by the next call's child; in process, on the 401: the
// ApiClient's own tests) and the heartbeat patches go on.
TEST(AgentKubeTokenTest, ARotatedTokenFileIsReadAgain) {
  std::string dir = TempDir("agent-kube-token");
  std::string log = dir + "/api.log";
  std::ofstream(dir + "/server-token") << "old-token\n";
  std::ofstream(dir + "/token") << "old-token\n";
  Server server({"python3", kApi + "server.py", "--max-seconds", "120", "--snapshot",
                 kSource + "/testdata/clusters/healthy.json", "--token-file", dir + "/server-token",
                 "--log", log});
  ASSERT_GT(server.port(), 0);
  std::ofstream(dir + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
      << "clusters:\n- name: t\n  cluster:\n    server: "
      << "http://127.0.0.1:" << server.port() << "\n"
      << "contexts:\n- name: t\n  context: {cluster: t, user: u}\n"
      << "users:\n- name: u\n  user: {tokenFile: " << dir << "/token}\n";
  AgentProcess a({"--root", kNodes + "ib-healthy", "--listen", "127.0.0.1:0", "--kubeconfig",
                  dir + "/kubeconfig", "--node-name", "gpu-node-01", "--reconcile", "100ms",
                  "--heartbeat", "1s"},
                 {"KUBECONFIG="});
  ASSERT_GT(a.port(), 0) << a.err();
  // `n` patches the server accepted after `from`. After the rotation, two: a request
  // authenticated with the old token just before it may be logged after it, and the next one
  // carries the new token (read again on the 401, or at once by the next call's child, which
  // reads the token file afresh and is never refused).
  auto patches_after = [&](size_t from, int n) {
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    const std::string patch = "PATCH /api/v1/nodes/gpu-node-01/status auth=token";
    for (size_t at = from; n > 0; --n, at += patch.size()) {
      if (text.size() <= at || (at = text.find(patch, at)) == std::string::npos) return false;
    }
    return true;
  };
  auto eventually = [](auto pred) {
    for (int i = 0; i < 300; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  };
  ASSERT_TRUE(eventually([&] { return patches_after(0, 1); })) << a.err();
  // The kubelet rotates the projected token: the server accepts only the new one from now on.
  std::ofstream(dir + "/token.new") << "new-token\n";
  fs::rename(dir + "/token.new", dir + "/token");
  std::ofstream(dir + "/server-token") << "new-token\n";
  size_t rotated_at = fs::file_size(log);
  EXPECT_TRUE(eventually([&] { return patches_after(rotated_at, 2); })) << a.err();
  std::string text;
  EXPECT_TRUE(a.WaitForMetrics(
      [](const std::string& t) { return MetricValue(t, "tocsin_agent_kube_connected") == 1; },
      seconds(5), &text))
      << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tocsin
