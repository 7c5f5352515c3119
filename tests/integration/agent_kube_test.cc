// `tocsin agent` against the test API server (tests/k8s_api/server.py): NodeConditions patched
// into nodes/<name>/status (the body as sent), Events on transitions, the optional taint,
// lastTransitionTime kept across a restart, and clear errors for a missing or unknown node.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "agent_process.h"
#include "run_binary.h"
#include "testing/fake_kubelet.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AgentProcess;
using testing::CopyFixtureNode;
using testing::Maps;
using testing::MetricValue;
using testing::RunBinary;
using testing::RunResult;
using testing::Server;
using testing::TempDir;
using testing::WriteFile;

const std::string kSource = TOCSIN_SOURCE_DIR;
const std::string kNodes = kSource + "/testdata/nodes/";
const std::string kApi = kSource + "/tests/k8s_api/";

class AgentKubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("agent-kube");
    StartServer();
  }
  // The test API server (again, with `extra` flags), and a kubeconfig for it.
  void StartServer(const std::vector<std::string>& extra = {}) {
    log_ = dir_ + "/api.log";
    server_.reset();
    std::vector<std::string> args = {"python3",       kApi + "server.py",
                                     "--max-seconds", "120",
                                     "--snapshot",    kSource + "/testdata/clusters/healthy.json",
                                     "--token",       "s3cret",
                                     "--log",         log_};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Server>(args);
    ASSERT_GT(server_->port(), 0);
    kubeconfig_ = dir_ + "/kubeconfig";
    std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                               << "clusters:\n- name: test\n  cluster:\n    server: "
                               << "http://127.0.0.1:" << server_->port() << "\n"
                               << "contexts:\n- name: test\n  context: {cluster: test, user: t}\n"
                               << "users:\n- name: t\n  user:\n    token: s3cret\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  json Api(const std::string& path) {
    RunResult r =
        RunBinary("python3", {"-c",
                              "import sys,urllib.request as u;"
                              "q=u.Request(sys.argv[1],headers={'Authorization':"
                              "'Bearer s3cret'});print(u.urlopen(q,timeout=10).read()."
                              "decode())",
                              "http://127.0.0.1:" + std::to_string(server_->port()) + path});
    return json::parse(r.out, nullptr, false);
  }
  json Condition(const std::string& type) {
    json node = Api("/api/v1/nodes/gpu-node-01");
    for (const auto& c : node["status"]["conditions"]) {
      if (c["type"] == type) return c;
    }
    return json();
  }
  std::vector<json> Events() {
    json list = Api("/api/v1/namespaces/default/events");
    return list.is_object() ? list["items"].get<std::vector<json>>() : std::vector<json>{};
  }
  std::string Log() {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The agent's metrics once it has patched its conditions `n` times.
  std::string AfterConditionPatches(const AgentProcess& a, double n) {
    std::string text;
    EXPECT_TRUE(a.WaitForMetrics(
        [n](const std::string& t) {
          return MetricValue(t, "tocsin_agent_condition_patches_total") >= n;
        },
        seconds(15), &text))
        << text << a.err();
    return text;
  }
  // tocsin_agent_fabric_facts_published, _patches_total and _dropped_total.
  static std::vector<double> FactsMetrics(const std::string& text) {
    return {MetricValue(text, "tocsin_agent_fabric_facts_published"),
            MetricValue(text, "tocsin_agent_fabric_facts_patches_total"),
            MetricValue(text, "tocsin_agent_fabric_facts_dropped_total")};
  }
  template <typename Pred>
  bool Eventually(Pred pred) {
    for (int i = 0; i < 300; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  std::string dir_, log_, kubeconfig_;
  std::unique_ptr<Server> server_;
};

TEST_F(AgentKubeTest, ConditionsEventsAndTaintReachTheApiServer) {
  std::string root = CopyFixtureNode("ib-port-down");
  AgentProcess a({"--root", root, "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig_,
                  "--reconcile", "100ms", "--taint", "--taint-severity", "error"},
                 {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
  ASSERT_GT(a.port(), 0) << a.err();
  ASSERT_TRUE(Eventually([&] { return Condition("RDMAFabricDegraded").is_object(); }))
      << a.err() << Log();
  json c = Condition("RDMAFabricDegraded");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "RdmaPortDown");
  EXPECT_NE(c["message"].get<std::string>().find("mlx5_2/1"), std::string::npos) << c;
  std::string onset = c["lastTransitionTime"];
  EXPECT_EQ(Condition("SharedStorageDegraded")["status"], "False");
  EXPECT_EQ(Condition("GPUNICAffinityBroken")["status"], "False");
  EXPECT_EQ(Condition("TocsinChecksStale")["status"], "False");
  // The node's own conditions (Ready, ...) are untouched: the patch merges by type.
  EXPECT_TRUE(Condition("Ready").is_object());
  // The patch as sent: the status subresource, a strategic merge patch of conditions only.
  std::string log = Log();
  EXPECT_NE(log.find("PATCH /api/v1/nodes/gpu-node-01/status auth=token "
                     "type=application/strategic-merge-patch+json body={\"status\":{\"conditions\":"
                     "[{\"lastHeartbeatTime\":"),
            std::string::npos)
      << log;
  // The whole body: exactly our four conditions, in node-problem-detector's form.
  size_t at = log.find(
      "PATCH /api/v1/nodes/gpu-node-01/status auth=token "
      "type=application/strategic-merge-patch+json body={\"status\"");
  ASSERT_NE(at, std::string::npos) << log;
  size_t body_at = log.find("body=", at);
  json body = json::parse(log.substr(body_at + 5, log.find('\n', body_at) - body_at - 5));
  ASSERT_EQ(body.size(), 1u) << body;
  ASSERT_EQ(body["status"].size(), 1u) << body;
  std::set<std::string> types;
  for (const auto& cond : body["status"]["conditions"]) {
    types.insert(cond["type"].get<std::string>());
    for (const char* key :
         {"status", "reason", "message", "lastHeartbeatTime", "lastTransitionTime"}) {
      EXPECT_TRUE(cond.contains(key)) << key << " in " << cond;
    }
    EXPECT_TRUE(cond["status"] == "True" || cond["status"] == "False") << cond;
  }
  EXPECT_EQ(types, (std::set<std::string>{"RDMAFabricDegraded", "SharedStorageDegraded",
                                          "GPUNICAffinityBroken", "TocsinChecksStale"}));
  std::vector<json> events = Events();
  ASSERT_EQ(events.size(), 1u) << json(events).dump(1);  // False at start is not a transition
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["reason"], "RdmaPortDown");
  EXPECT_EQ(events[0]["involvedObject"]["kind"], "Node");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "gpu-node-01");
  EXPECT_EQ(events[0]["source"]["component"], "tocsin-agent");
  // The workloads hit: the pods on this node that request RDMA (listed by spec.nodeName).
  EXPECT_NE(events[0]["message"].get<std::string>().find(
                "pods on this node that use it: ml/llama-pt-master-0"),
            std::string::npos)
      << events[0]["message"];
  EXPECT_NE(Log().find("GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-01"),
            std::string::npos);
  // The taint is there while the error finding lasts.
  ASSERT_TRUE(Eventually([&] {
    json node = Api("/api/v1/nodes/gpu-node-01");
    for (const auto& t : node["spec"].value("taints", json::array())) {
      if (t["key"] == "tocsin.io/degraded" && t["effect"] == "NoSchedule") return true;
    }
    return false;
  })) << Log();

  // The port comes back (and the degraded rate is fixed): False, a Normal event, no taint.
  WriteFile(root + "/sys/class/infiniband/mlx5_2/ports/1/state", "4: ACTIVE\n");
  WriteFile(root + "/sys/class/infiniband/mlx5_2/ports/1/phys_state", "5: LinkUp\n");
  WriteFile(root + "/sys/class/infiniband/mlx5_2/ports/1/rate", "400 Gb/sec (4X NDR)\n");
  WriteFile(root + "/sys/class/infiniband/mlx5_3/ports/1/rate", "400 Gb/sec (4X NDR)\n");
  WriteFile(root + "/sys/class/infiniband/mlx5_3/ports/1/counters/symbol_error", "0\n");
  WriteFile(root + "/sys/class/infiniband/mlx5_3/ports/1/counters/link_downed", "0\n");
  a.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return Condition("RDMAFabricDegraded")["status"] == "False"; }))
      << a.err();
  EXPECT_NE(Condition("RDMAFabricDegraded")["lastTransitionTime"], onset);
  ASSERT_TRUE(Eventually([&] { return Events().size() == 2; })) << json(Events()).dump(1);
  EXPECT_EQ(Events()[1]["type"], "Normal");
  EXPECT_EQ(Events()[1]["reason"], "RDMAFabricHealthy");
  EXPECT_TRUE(Eventually([&] {
    json node = Api("/api/v1/nodes/gpu-node-01");
    return node["spec"].value("taints", json::array()).empty();
  })) << Log();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait().exit_code, 0);

  // A restarted agent keeps lastTransitionTime: the condition did not change.
  std::string kept = Condition("RDMAFabricDegraded")["lastTransitionTime"];
  AgentProcess b({"--root", root, "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig_,
                  "--reconcile", "100ms", "--heartbeat", "100ms"},
                 {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
  ASSERT_GT(b.port(), 0) << b.err();
  ASSERT_TRUE(b.WaitForMetrics(
      [](const std::string& t) {
        return MetricValue(t, "tocsin_agent_condition_patches_total") >= 2;
      },
      seconds(15)));
  EXPECT_EQ(Condition("RDMAFabricDegraded")["lastTransitionTime"], kept);
  EXPECT_EQ(Events().size(), 2u);
  fs::remove_all(root);
}

// Issue 20: the job a pod belongs to, from the pod's labels (the list of this node's pods the
// agent may already read), joined to what the kubelet's PodResources says the pod holds.
TEST_F(AgentKubeTest, PodsAreNamedByTheJobTheirLabelsSay) {
  std::string answer = dir_ + "/answer.json";
  std::ofstream(answer) << R"({"pods": [
      {"namespace": "ml", "name": "llama-pt-master-0", "containers": [{"name": "pytorch",
        "devices": [{"resource": "rdma/hca_shared_devices_a", "ids": ["0000:05:00.0"]}]}]},
      {"namespace": "kube-system", "name": "rdma-shared-dp-ds-de-01", "containers": []}]})";
  std::string socket = dir_ + "/kubelet.sock";
  ::tocsin::testing::FakeKubelet kubelet(socket, answer);
  ASSERT_TRUE(kubelet.ok()) << kubelet.error();
  AgentProcess a({"--root", kNodes + "ib-healthy", "--listen", "127.0.0.1:0", "--kubeconfig",
                  kubeconfig_, "--pod-resources-socket", socket},
                 {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
  ASSERT_GT(a.port(), 0) << a.err();
  const std::string info =
      "tocsin_pod_info{namespace=\"ml\",pod=\"llama-pt-master-0\",job_name=\"llama-pt\","
      "node=\"gpu-node-01\"}";
  std::string text;
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, info) == 1; },
                               seconds(20), &text))
      << text << a.err() << Log();
  EXPECT_EQ(MetricValue(text, "tocsin_pod_device_info{namespace=\"ml\",pod=\"llama-pt-master-0\","
                              "device_kind=\"rdma\",device=\"mlx5_0\"}"),
            1)
      << text;
  // The device plugin's pod belongs to no job: no tocsin_pod_info.
  EXPECT_EQ(text.find("pod=\"rdma-shared-dp-ds-de-01\",job_name"), std::string::npos) << text;
  EXPECT_EQ(MetricValue(text, "tocsin_pod_attribution_dropped{what=\"unlabelled\"}"), 0) << text;
  // Only this node's pods were asked for (the right deploy/agent already grants).
  EXPECT_NE(Log().find("GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-01"),
            std::string::npos)
      << Log();
}

TEST_F(AgentKubeTest, AMissingNodeNameOrUnknownNodeIsClear) {
  RunResult r = RunBinary(
      TOCSIN_BINARY,
      {"agent", "--root", kNodes + "empty", "--kubeconfig", kubeconfig_, "--listen", "127.0.0.1:0"},
      {"NODE_NAME="});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no node name: set --node-name or NODE_NAME"), std::string::npos) << r.err;
  // A node the API does not know: the agent keeps serving and says why, every reconcile.
  AgentProcess a({"--root", kNodes + "empty", "--listen", "127.0.0.1:0", "--kubeconfig",
                  kubeconfig_, "--node-name", "no-such-node", "--reconcile", "100ms"});
  ASSERT_GT(a.port(), 0) << a.err();
  EXPECT_TRUE(a.WaitForLog("kubernetes: GET http://127.0.0.1:" + std::to_string(server_->port()) +
                               "/api/v1/nodes/no-such-node: HTTP 404",
                           seconds(15)))
      << a.err();
  EXPECT_EQ(a.Get("/metrics").first, 200);
}

// Issue 18: the node's fabric facts (HCA firmware, board, port 1's link layer, rate and MTU, the
// MOFED driver) as the annotation tocsin.io/fabric, through nodes/<name>/status (the right the
// agent already has): at start, then only when they change; a restart that finds them there
// writes nothing.
TEST_F(AgentKubeTest, FabricFactsArePublishedThroughNodeStatusWhenTheyChange) {
  std::string root = CopyFixtureNode("ib-healthy");
  const std::vector<std::string> args = {"--root",       root,        "--listen",    "127.0.0.1:0",
                                         "--kubeconfig", kubeconfig_, "--reconcile", "100ms",
                                         "--heartbeat",  "100ms"};
  auto facts = [&]() -> json {
    json node = Api("/api/v1/nodes/gpu-node-01");
    if (!node.is_object()) return json();
    json ann = node["metadata"].value("annotations", json::object());
    return json::parse(ann.value("tocsin.io/fabric", ""), nullptr, false);
  };
  auto facts_patches = [&] {
    const std::string patch =
        "/status auth=token type=application/strategic-merge-patch+json body={\"metadata\"";
    std::string log = Log();
    size_t n = 0;
    for (size_t at = log.find(patch); at != std::string::npos; at = log.find(patch, at + 1)) ++n;
    return n;
  };
  {
    AgentProcess a(args, {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
    ASSERT_GT(a.port(), 0) << a.err();
    ASSERT_TRUE(Eventually([&] { return facts().is_object(); })) << a.err() << Log();
    json f = facts();
    EXPECT_EQ(f["v"], 1);
    EXPECT_EQ(f["driver"], "24.10-0.7.0");
    ASSERT_EQ(f["hcas"].size(), 4u) << f;
    EXPECT_EQ(f["hcas"][0], json({{"name", "mlx5_0"},
                                  {"fw", "28.39.1002"},
                                  {"board_id", "MT_0000000838"},
                                  {"link_layer", "InfiniBand"},
                                  {"rate", "400 Gb/sec (4X NDR)"},
                                  {"mtu", ""}}));
    // The patch as sent: the status subresource, the annotation and nothing else.
    std::string log = Log();
    size_t at = log.find(
        "PATCH /api/v1/nodes/gpu-node-01/status auth=token "
        "type=application/strategic-merge-patch+json body={\"metadata\"");
    ASSERT_NE(at, std::string::npos) << log;
    size_t body_at = log.find("body=", at);
    json body = json::parse(log.substr(body_at + 5, log.find('\n', body_at) - body_at - 5));
    EXPECT_EQ(body, json({{"metadata", {{"annotations", {{"tocsin.io/fabric", f.dump()}}}}}}));
    // Condition heartbeats go on every 100 ms; the unchanged facts are not written again.
    std::string text = AfterConditionPatches(a, 5);
    EXPECT_EQ(FactsMetrics(text), (std::vector<double>{1, 1, 0})) << text;
    EXPECT_EQ(facts_patches(), 1u) << Log();

    // A firmware update on one HCA: published at the next rdma run.
    WriteFile(root + "/sys/class/infiniband/mlx5_1/fw_ver", "28.40.1000\n");
    a.Signal(SIGHUP);
    ASSERT_TRUE(Eventually([&] {
      json g = facts();
      return g.is_object() && g["hcas"][1]["fw"] == "28.40.1000";
    })) << a.err();
    EXPECT_EQ(facts()["hcas"][0]["fw"], "28.39.1002");
    ASSERT_TRUE(a.WaitForMetrics(
        [](const std::string& t) {
          return MetricValue(t, "tocsin_agent_fabric_facts_patches_total") == 2 &&
                 MetricValue(t, "tocsin_agent_fabric_facts_published") == 1;
        },
        seconds(15), &text))
        << text;
    a.Signal(SIGTERM);
    EXPECT_EQ(a.Wait().exit_code, 0);
  }
  // A restarted agent finds its facts on the node: nothing to write.
  AgentProcess b(args, {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
  ASSERT_GT(b.port(), 0) << b.err();
  std::string text = AfterConditionPatches(b, 3);
  EXPECT_EQ(FactsMetrics(text), (std::vector<double>{1, 0, 0})) << text;
  EXPECT_EQ(facts_patches(), 2u) << Log();
  fs::remove_all(root);
}

// An API server that answers the status patch without the annotation: said once in the log and
// by tocsin_agent_fabric_facts_dropped_total, never reported as published, not re-sent while the
// facts stay the same.
TEST_F(AgentKubeTest, AServerThatDropsTheFactsIsSaidOnce) {
  StartServer({"--status-drops-metadata"});
  AgentProcess a({"--root", kNodes + "ib-healthy", "--listen", "127.0.0.1:0", "--kubeconfig",
                  kubeconfig_, "--reconcile", "100ms", "--heartbeat", "100ms"},
                 {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
  ASSERT_GT(a.port(), 0) << a.err();
  std::string text = AfterConditionPatches(a, 5);
  EXPECT_EQ(FactsMetrics(text), (std::vector<double>{0, 1, 1})) << text;
  EXPECT_EQ(MetricValue(text, "tocsin_agent_kube_errors_total"), 0) << text;
  std::string err = a.err();
  const std::string said = "was answered without the annotation tocsin.io/fabric";
  size_t first = err.find(said);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(said, first + 1), std::string::npos) << err;
  json node = Api("/api/v1/nodes/gpu-node-01");
  EXPECT_FALSE(node["metadata"].value("annotations", json::object()).contains("tocsin.io/fabric"));
}

// Issue 22: each API call is made by a short-lived child (`tocsin agent --kube-call`), so the
// agent, after its patches and Events, maps neither libcurl nor a TLS library; with
// --kube-in-process the same writes map libcurl in the agent (the check can see it).
TEST_F(AgentKubeTest, TheAgentMapsNoLibcurlAfterItsWrites) {
  std::string root = CopyFixtureNode("ib-port-down");
  for (bool in_process : {false, true}) {
    if (in_process) StartServer();  // the node without our conditions again: an Event to post
    std::vector<std::string> args = {"--root", root, "--listen", "127.0.0.1:0", "--kubeconfig",
                                     kubeconfig_, "--reconcile", "100ms", "--heartbeat", "1s",
                                     "--no-pod-resources"};
    if (in_process) args.push_back("--kube-in-process");
    AgentProcess a(args, {"NODE_NAME=gpu-node-01", "KUBECONFIG="});
    ASSERT_GT(a.port(), 0) << a.err();
    std::string text = AfterConditionPatches(a, 2);
    EXPECT_GE(MetricValue(text, "tocsin_agent_events_total"), 1) << text;
    EXPECT_EQ(MetricValue(text, "tocsin_agent_kube_call_failures_total"), 0) << text;
    EXPECT_EQ(MetricValue(text, "tocsin_agent_kube_errors_total"), 0) << text << a.err();
    std::string maps = Maps(a);
    ASSERT_NE(maps.find("tocsin"), std::string::npos) << "not the agent's maps";
    if (in_process) {
      EXPECT_NE(maps.find("libcurl"), std::string::npos) << "--kube-in-process: no libcurl?";
      continue;
    }
    for (const char* lib : {"libcurl", "libssl", "libcrypto", "libgnutls", "libgssapi", "libldap",
                            "libssh2", "librtmp", "libnghttp2"}) {
      EXPECT_EQ(maps.find(lib), std::string::npos) << lib << " is mapped by the agent";
    }
  }
}

}  // namespace
}  // namespace tocsin
