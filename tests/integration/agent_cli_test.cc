// `tocsin agent` end to end as an exporter: clean metrics whose values are the fixture's, a port
// going down between two scrapes, a hung shared filesystem (unknown within the deadline while
// /metrics answers), a wedged NVML, the YAML config, deploy/agent, and a SIGTERM shutdown within a
// second. Kubernetes: agent_kube_test.cc; Prometheus: agent_prometheus_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "agent_process.h"
#include "run_binary.h"
#include "slowfs.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AgentProcess;
using testing::Base;
using testing::Ready;
using testing::CopyFixtureNode;
using testing::MetricValue;
using testing::RunBinary;
using testing::RunResult;
using testing::SlowFs;
using testing::TempDir;
using testing::WriteFile;
using SteadyClock = std::chrono::steady_clock;

const std::string kSource = TOCSIN_SOURCE_DIR;
const std::string kNodes = kSource + "/testdata/nodes/";
const std::string kPort2 = "/sys/class/infiniband/mlx5_1/ports/1";

TEST(AgentCliTest, ServesCleanMetricsWithTheFixtureValues) {
  AgentProcess a(Base(kNodes + "ib-healthy", {"--nvml-library", FAKE_NVML}));
  ASSERT_GT(a.port(), 0) << a.err();
  EXPECT_EQ(a.Get("/healthz").first, 200);
  ASSERT_TRUE(Ready(a)) << a.err();
  auto [status, text] = a.Get("/metrics");
  ASSERT_EQ(status, 200);
  std::string file = TempDir("agent-metrics") + "/metrics.txt";
  std::ofstream(file) << text;
  RunResult lint = testing::RunBinary("promtool", {"check", "metrics"}, {}, file);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  EXPECT_EQ(lint.out + lint.err, "") << "promtool has remarks";

  const std::string port0 = "{device=\"mlx5_0\",port=\"1\"}";
  EXPECT_EQ(MetricValue(text, "tocsin_rdma_port_up" + port0), 1);
  EXPECT_EQ(MetricValue(text, "tocsin_rdma_port_state" + port0), 4);
  EXPECT_EQ(MetricValue(text, "tocsin_rdma_port_phys_state" + port0), 5);
  EXPECT_EQ(MetricValue(text, "tocsin_rdma_port_rate_bytes_per_second" + port0), 400e9 / 8);
  // port_xmit_data counts 32-bit words: bytes = octets x 4.
  EXPECT_EQ(MetricValue(text, "tocsin_rdma_port_transmit_bytes_total" + port0), 91231232345.0 * 4);
  EXPECT_EQ(MetricValue(text, "tocsin_rdma_port_receive_bytes_total" + port0), 91230002345.0 * 4);
  EXPECT_EQ(MetricValue(text,
                        "tocsin_rdma_port_errors_total{device=\"mlx5_0\",port=\"1\","
                        "counter=\"symbol_error\"}"),
            0);
  EXPECT_EQ(MetricValue(text, "tocsin_netdev_receive_bytes_total{device=\"eno1\"}"), 734003200);
  EXPECT_EQ(MetricValue(text, "tocsin_gpus"), 8);
  EXPECT_EQ(MetricValue(text, "tocsin_nvml_up{status=\"ok\"}"), 1);
  EXPECT_EQ(MetricValue(text, "tocsin_gpu_utilization_ratio{gpu=\"0000:03:00.0\"}"), 0.87);
  EXPECT_EQ(MetricValue(text, "tocsin_gpu_memory_used_bytes{gpu=\"0000:03:00.0\"}"), 10737418240.0);
  EXPECT_EQ(MetricValue(text,
                        "tocsin_lustre_import_healthy{device=\"testfs-OST0001-osc-"
                        "ffff8c5a4b6e9000\",target=\"testfs-OST0001_UUID\"}"),
            1);
  EXPECT_EQ(MetricValue(text,
                        "tocsin_lustre_llite_bytes_total{llite=\"testfs-ffff8c5a4b6e9000\","
                        "op=\"read_bytes\"}"),
            536870912);
  EXPECT_EQ(MetricValue(text,
                        "tocsin_lustre_osc_operation_seconds_total{device=\"testfs-OST0000-"
                        "osc-ffff8c5a4b6e9000\",op=\"req_waittime\"}"),
            1.1);
  for (const char* check :
       {"rdma.port.down", "rdma.port.rate", "gpu.nic.affinity", "lustre.import.state"}) {
    std::string task = std::string(check).starts_with("rdma")  ? "rdma"
                       : std::string(check).starts_with("gpu") ? "gpu"
                                                                 : "storage";
    EXPECT_EQ(MetricValue(text, "tocsin_check_status{check=\"" + std::string(check) + "\",task=\"" +
                                    task + "\"}"),
              1)
        << check;
  }
  EXPECT_GT(MetricValue(text,
                        "tocsin_check_last_run_timestamp_seconds{check=\"rdma.port.down\","
                        "task=\"rdma\"}"),
            1.7e9);
  EXPECT_GT(MetricValue(text, "tocsin_agent_resident_memory_bytes"), 1e6);
  EXPECT_EQ(MetricValue(text, "tocsin_agent_scrapes_total"), 1);
  // The conditions are evaluated once every task has run: poll for them.
  std::string last;
  EXPECT_TRUE(a.WaitForMetrics(
      [](const std::string& t) {
        return MetricValue(t,
                           "tocsin_node_condition{condition=\"RDMAFabricDegraded\","
                           "status=\"False\"}") == 1;
      },
      seconds(10), &last))
      << last;

  // SIGTERM: out within a second (and a margin for the sanitizers).
  auto start = SteadyClock::now();
  a.Signal(SIGTERM);
  RunResult r = a.Wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(SteadyClock::now() - start, milliseconds(1500));
  EXPECT_NE(r.err.find("tocsin agent: stopped"), std::string::npos) << r.err;
}

int Threads(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

// A wedged GPU driver (NVML never returns): gpu.nvml fails with status timeout, the gpu task
// keeps running on time, and the agent asks NVML once rather than piling up a thread per run.
TEST(AgentCliTest, AWedgedNvmlIsReportedOnceWithoutPilingUpThreads) {
  AgentProcess a(Base(kNodes + "ib-healthy", {"--nvml-library", FAKE_NVML, "--nvml-timeout", "0.2",
                                              "--interval", "gpu=300ms"}),
                 {"FAKE_NVML_HANG=1"});
  ASSERT_GT(a.port(), 0) << a.err();
  std::string text;
  const std::string runs = "tocsin_task_runs_total{task=\"gpu\",outcome=\"ok\"}";
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, runs) >= 2; },
                               seconds(20), &text))
      << text << a.err();
  int threads = Threads(a.pid());
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, runs) >= 8; },
                               seconds(30), &text))
      << text;
  EXPECT_EQ(MetricValue(text, "tocsin_nvml_up{status=\"timeout\"}"), 0);
  EXPECT_EQ(MetricValue(text, "tocsin_check_status{check=\"gpu.nvml\",task=\"gpu\"}"), 0);
  EXPECT_LE(Threads(a.pid()), threads + 1) << "a thread per gpu run";
}

TEST(AgentCliTest, APortGoingDownFlipsTheMetricTheCheckAndTheCondition) {
  std::string root = CopyFixtureNode("ib-healthy");
  AgentProcess a(Base(root, {"--reconcile", "100ms"}));
  ASSERT_GT(a.port(), 0) << a.err();
  ASSERT_TRUE(Ready(a)) << a.err();
  const std::string up = "tocsin_rdma_port_up{device=\"mlx5_1\",port=\"1\"}";
  const std::string check = "tocsin_check_status{check=\"rdma.port.down\",task=\"rdma\"}";
  const std::string degraded =
      "tocsin_node_condition{condition=\"RDMAFabricDegraded\",status=\"True\"}";
  std::string text;
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, degraded) == 0; },
                               seconds(10), &text));
  EXPECT_EQ(MetricValue(text, up), 1);
  EXPECT_EQ(MetricValue(text, check), 1);

  WriteFile(root + kPort2 + "/state", "1: DOWN\n");
  WriteFile(root + kPort2 + "/phys_state", "2: Polling\n");
  a.Signal(SIGHUP);  // run every task now instead of waiting for the 15 s interval
  EXPECT_TRUE(a.WaitForMetrics(
      [&](const std::string& t) {
        return MetricValue(t, up) == 0 && MetricValue(t, check) == 0 &&
               MetricValue(t, degraded) == 1;
      },
      seconds(10), &text))
      << text;
  EXPECT_TRUE(
      a.WaitForLog("condition RDMAFabricDegraded=True (RdmaPortDown): mlx5_1/1", seconds(5)))
      << a.err();
  fs::remove_all(root);
}

TEST(AgentCliTest, AHungSharedFilesystemIsAFaultWithinTheDeadlineWhileMetricsAnswer) {
  SlowFs slow("");
  ASSERT_TRUE(slow.ok());
  AgentProcess a(Base(kNodes + "ib-healthy",
                      {"--probe-path", slow.path(), "--interval", "storage-probe=8s",
                       "--timeout", "storage-probe=8s", "--reconcile", "100ms"}));
  ASSERT_GT(a.port(), 0) << a.err();
  ASSERT_TRUE(Ready(a)) << a.err();
  const std::string probe =
      "tocsin_check_status{check=\"storage.probe\",task=\"storage-probe:" + slow.path() + "\"}";
  std::string text;
  // (8 s: the sanitized binary the probe runs takes seconds to start on a loaded machine.)
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, probe) == 1; },
                               seconds(60), &text))
      << text << a.err();
  EXPECT_GE(MetricValue(text,
                        "tocsin_storage_probe_duration_seconds_count{op=\"write_fsync\","
                        "path=\"" +
                            slow.path() + "\"}"),
            1);
  // Every operation on the mount blocks from now on, as on a lost server.
  std::ofstream(slow.path() + "/.hang") << "x";
  auto hung_at = SteadyClock::now();
  // The probe did not answer within its deadline: a fault of the storage (known), while what it
  // could not measure (the latency ceilings, the data) is unknown.
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, probe) == 0; },
                               seconds(60), &text))
      << text << a.err();
  // Within two runs (8 s apart) and their deadlines (8 s): an operation over --op-timeout
  // fails the probe at once, a whole run over its deadline twice in a row (a starved node can
  // delay starting the child once); with a margin for the sanitizers.
  EXPECT_LT(SteadyClock::now() - hung_at, seconds(40));
  EXPECT_EQ(MetricValue(text, "tocsin_check_status{check=\"storage.latency.high\",task=\"storage-probe:" +
                                   slow.path() + "\"}"),
            -1)
      << text;
  EXPECT_EQ(MetricValue(text, "tocsin_storage_probe_success{path=\"" + slow.path() + "\"}"), 0)
      << text;
  EXPECT_TRUE(a.WaitForMetrics(
      [&](const std::string& t) {
        return MetricValue(t,
                           "tocsin_node_condition{condition=\"SharedStorageDegraded\","
                           "status=\"True\"}") == 1;
      },
      seconds(10), &text))
      << text;
  EXPECT_TRUE(a.WaitForLog("condition SharedStorageDegraded=True", seconds(5))) << a.err();
  // /metrics keeps answering quickly while the probe is stuck.
  auto start = SteadyClock::now();
  EXPECT_EQ(a.Get("/metrics").first, 200);
  EXPECT_LT(SteadyClock::now() - start, seconds(1));
  start = SteadyClock::now();
  a.Signal(SIGTERM);
  RunResult r = a.Wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Not held by the hung probe (its deadline is 8 s, the hang endless); the sanitizers' exit
  // (LeakSanitizer's scan) takes a second or two on a loaded machine.
  EXPECT_LT(SteadyClock::now() - start, seconds(5));
}

// A pod's container log in the kubelet's layout, each line in the CRI format.
void WritePodLog(const std::string& root, const std::string& pod_dir, const std::string& fixture) {
  std::string dir = root + "/var/log/pods/" + pod_dir + "/trainer";
  fs::create_directories(dir);
  std::ifstream in(kSource + "/src/nccl/testdata/" + fixture);
  std::ofstream out(dir + "/0.log");
  std::string line;
  while (std::getline(in, line)) out << "2026-11-30T00:00:00.000000000Z stdout F " << line << "\n";
}

// The agent reads the NCCL logs of the pods on its node as they grow: on a node with ACTIVE RDMA
// ports, a pod whose ranks went over sockets is nccl.transport.socket, named by pod.
TEST(AgentCliTest, PodLogsShowWhichPodFellBackToSockets) {
  std::string root = CopyFixtureNode("ib-healthy");
  WritePodLog(root, "ml_good-0_0a1b", "ib-2.18.log");
  AgentProcess a(Base(root, {"--reconcile", "100ms"}));
  ASSERT_GT(a.port(), 0) << a.err();
  const std::string socket = "tocsin_check_status{check=\"nccl.transport.socket\",task=\"nccl\"}";
  std::string text;
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, socket) == 1; },
                               seconds(20), &text))
      << text << a.err();
  EXPECT_NE(text.find("tocsin_nccl_process_info{namespace=\"ml\",pod=\"good-0\","
                      "container=\"trainer\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("transport=\"Socket\""), std::string::npos) << text;

  WritePodLog(root, "ml_llama-0_9f8e", "socket-2.12.log");  // a new pod starts on the node
  a.Signal(SIGHUP);
  ASSERT_TRUE(a.WaitForMetrics([&](const std::string& t) { return MetricValue(t, socket) == 0; },
                               seconds(20), &text))
      << text << a.err();
  EXPECT_NE(text.find("pod=\"llama-0\",container=\"trainer\",host=\"vm-1\""), std::string::npos)
      << text;
  EXPECT_NE(text.find("transport=\"Socket\""), std::string::npos) << text;
  fs::remove_all(root);
}

TEST(AgentCliTest, ConfigFileKeysAreTheFlags) {
  std::string dir = TempDir("agent-config");
  std::ofstream(dir + "/agent.yaml") << "# tocsin agent\n"
                                     << "no-kube: true\n"
                                     << "root: " << kNodes << "roce\n"
                                     << "listen: 127.0.0.1:0\n"
                                     << "interval: {rdma: 2s, storage: 45s}\n"
                                     << "timeout:\n  rdma: 1s\n"
                                     << "expect-rdma-ports: 4\n"
                                     << "probe-path: []\n";
  AgentProcess a({"--config", dir + "/agent.yaml", "--interval", "fabric=3s"});
  ASSERT_GT(a.port(), 0) << a.err();
  std::string err = a.err();
  EXPECT_NE(err.find("task rdma: every 2000 ms, timeout 1000 ms"), std::string::npos) << err;
  EXPECT_NE(err.find("task storage: every 45000 ms"), std::string::npos) << err;
  EXPECT_NE(err.find("task fabric: every 3000 ms"), std::string::npos) << err;
  std::string text;
  // The roce fixture has 2 ports, the config expects 4.
  EXPECT_TRUE(a.WaitForMetrics(
      [](const std::string& t) {
        return MetricValue(t, "tocsin_check_status{check=\"rdma.device.missing\",task=\"rdma\"}") ==
               0;
      },
      seconds(10), &text))
      << text;

  std::ofstream(dir + "/bad.yaml") << "no-kube: true\nlisten-port: 9\n";
  RunResult bad = RunBinary(TOCSIN_BINARY, {"agent", "--config", dir + "/bad.yaml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("listen-port"), std::string::npos) << bad.err;
  std::ofstream(dir + "/worse.yaml") << "interval: {rdma: {deeper: 1}}\n";
  bad = RunBinary(TOCSIN_BINARY, {"agent", "--config", dir + "/worse.yaml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("interval: expected a mapping of plain values"), std::string::npos)
      << bad.err;
  bad = RunBinary(TOCSIN_BINARY, {"agent", "--no-kube", "--interval", "nosuch=1s"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("TASK one of fabric, gpu, nccl, pods, rdma, storage, storage-probe"),
            std::string::npos)
      << bad.err;
  bad = RunBinary(TOCSIN_BINARY, {"agent", "--no-kube", "--tcp-busy-above", "-5"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--tcp-busy-above: must be a number from 0 to 1e+15, got \"-5\""),
            std::string::npos)
      << bad.err;
  bad = RunBinary(TOCSIN_BINARY, {"agent", "--no-kube", "--timeout", "rdma=1m"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("task rdma: timeout 60000 ms is longer than its interval"),
            std::string::npos)
      << bad.err;
  fs::remove_all(dir);
}

// deploy/agent builds with kustomize (as `kubectl apply -k deploy/agent` would), grants exactly
// the rights the agent uses, each explained, and its agent.yaml is a config the agent takes.
TEST(AgentCliTest, DeployManifestsBuildAndTheirConfigRuns) {
  RunResult k = RunBinary("kubectl", {"kustomize", kSource + "/deploy/agent"});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  std::map<std::string, YAML::Node> by_kind;
  std::vector<YAML::Node> roles;
  for (const auto& doc : YAML::LoadAll(k.out)) {
    std::string kind = doc["kind"].as<std::string>();
    by_kind[kind + "/" + doc["metadata"]["name"].as<std::string>()] = doc;
    if (kind == "ClusterRole" || kind == "Role") roles.push_back(doc);
  }
  ASSERT_TRUE(by_kind.count("DaemonSet/tocsin-agent")) << k.out;
  YAML::Node pod = by_kind["DaemonSet/tocsin-agent"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "tocsin-agent");
  YAML::Node c = pod["containers"][0];
  EXPECT_EQ(c["env"][0]["name"].as<std::string>(), "NODE_NAME");
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(), "spec.nodeName");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  // Root for debugfs, but nothing else: no capabilities, no escalation, the runtime's seccomp.
  EXPECT_EQ(c["securityContext"]["seccompProfile"]["type"].as<std::string>(""), "RuntimeDefault");
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0].as<std::string>(""), "ALL");
  // Every host folder is mounted read-only: the mounts are there to check (a renamed key or a
  // moved container would otherwise leave this loop nothing to look at).
  ASSERT_TRUE(c["volumeMounts"].IsSequence()) << c;
  std::set<std::string> host_mounts;
  for (const auto& m : c["volumeMounts"]) {
    std::string name = m["name"].as<std::string>();
    if (name != "config") {
      EXPECT_TRUE(m["readOnly"].as<bool>(false)) << m;
      host_mounts.insert(name);
    }
  }
  EXPECT_TRUE(host_mounts.count("host-sys") && host_mounts.count("host-proc"))
      << "the agent reads the host's /sys and /proc through these mounts: " << c["volumeMounts"];
  // Exactly: get nodes, patch nodes/status, list pods, create events (no watch, update, delete).
  std::set<std::string> granted;
  for (const auto& r : roles) {
    for (const auto& rule : r["rules"]) {
      for (const auto& res : rule["resources"]) {
        for (const auto& verb : rule["verbs"]) {
          granted.insert(res.as<std::string>() + ":" + verb.as<std::string>());
        }
      }
    }
  }
  EXPECT_EQ(granted, (std::set<std::string>{"nodes:get", "nodes/status:patch", "pods:list",
                                            "events:create"}));
  // Every rule carries its reason: in each file of deploy/agent that grants rights, whether or
  // not the kustomization includes it (the taint and proxy ones are opt-in), and at least as many
  // rules as the rendered roles hold, so that moving or renaming the files cannot leave this
  // check with nothing to read.
  size_t rendered_rules = 0;
  for (const auto& r : roles) rendered_rules += r["rules"].size();
  std::set<std::string> rbac_files;
  size_t commented_rules = 0;
  for (const auto& entry : fs::directory_iterator(kSource + "/deploy/agent")) {
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("apiVersion: rbac.authorization.k8s.io/") == std::string::npos) continue;
    std::string file = entry.path().filename().string();
    rbac_files.insert(file);
    std::istringstream lines(text);
    std::string line;
    bool explained = false;  // a comment since the last rule
    while (std::getline(lines, line)) {
      if (line.find('#') != std::string::npos) explained = true;
      if (line.find("verbs:") != std::string::npos) {
        ++commented_rules;
        EXPECT_TRUE(explained) << file << ": a rule without a comment: " << line;
        explained = false;
      }
    }
  }
  EXPECT_TRUE(rbac_files.count("rbac.yaml") && rbac_files.count("rbac-taint.yaml"))
      << "deploy/agent's RBAC files moved? found " << rbac_files.size();
  EXPECT_GE(commented_rules, rendered_rules)
      << "the rendered roles hold rules that no file of deploy/agent was read for";
  // The shipped agent.yaml runs (flags win: a fixture root, no Kubernetes, any port).
  std::string dir = TempDir("agent-deploy");
  std::ofstream(dir + "/agent.yaml")
      << by_kind["ConfigMap/tocsin-agent"]["data"]["agent.yaml"].as<std::string>();
  AgentProcess a({"--config", dir + "/agent.yaml", "--root", kNodes + "ib-healthy", "--no-kube",
                  "--listen", "127.0.0.1:0"});
  EXPECT_GT(a.port(), 0) << a.err();
  EXPECT_TRUE(a.WaitForLog("task gpu: every 30000 ms, timeout 15000 ms", seconds(5))) << a.err();
  fs::remove_all(dir);
}

// Issue 13: a FIFO in sysfs hung the agent's discovery before it served anything, and a FIFO as
// --config hung it at start. Now the agent serves and gets ready (the port's state is unknown,
// never ok), and --config FIFO is exit 2 naming the path.
TEST(AgentCliTest, AFifoInSysfsOrAsConfigDoesNotHangTheAgent) {
  std::string root = CopyFixtureNode("ib-healthy");
  std::string state = fs::canonical(root + kPort2).string() + "/state";
  fs::remove(state);
  ASSERT_EQ(::mkfifo(state.c_str(), 0600), 0);
  {
    AgentProcess a(Base(root));
    ASSERT_GT(a.port(), 0) << a.err();
    ASSERT_TRUE(Ready(a)) << a.err();
    std::string text;
    EXPECT_TRUE(a.WaitForMetrics(
        [&](const std::string& t) {
          double v = MetricValue(t, "tocsin_check_status{check=\"rdma.port.down\",task=\"rdma\"}");
          return v == -1 || v == 0;
        },
        seconds(10), &text))
        << text;
  }
  std::string config = root + "/agent.yaml";
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  RunResult r = testing::RunBinaryWithin(60, TOCSIN_BINARY, {"agent", "--config", config});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--config " + config + ": not a regular file (a FIFO)"), std::string::npos)
      << r.err;
  fs::remove_all(root);
}

}  // namespace
}  // namespace tocsin
