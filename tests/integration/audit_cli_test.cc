// `tocsin audit --from <snapshot>` on the fixture clusters in testdata/clusters.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "run_binary.h"

namespace tocsin {
namespace {

using nlohmann::json;
using testing::FindingsOf;
using testing::JsonRun;
using testing::RunBinary;
using testing::RunResult;
using testing::RunTocsinJson;

const std::string kClusters = std::string(TOCSIN_SOURCE_DIR) + "/testdata/clusters/";

JsonRun Audit(std::vector<std::string> files, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"audit", "-o", "json", "--now", "2026-11-29T00:00:00Z"};
  for (const auto& f : files) {
    args.push_back("--from");
    args.push_back(kClusters + f);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return RunTocsinJson(args);
}

TEST(AuditCliTest, HealthyClusterIsCleanFromJsonAndYaml) {
  for (const char* f : {"healthy.json", "healthy.yaml"}) {
    JsonRun r = Audit({f}, {"--fail-on", "info"});
    EXPECT_EQ(r.exit_code, 0) << f << r.report["findings"].dump(2);
    EXPECT_TRUE(r.report["findings"].empty()) << f;
    EXPECT_EQ(r.report["inventory"]["nodes"], 4) << f;
    EXPECT_EQ(r.report["inventory"]["fabric_nodes"], 3) << f;
    EXPECT_EQ(r.report["inventory"]["device_plugins"][0]["daemonset"],
              "kube-system/rdma-shared-dp-ds");
  }
}

// The SR-IOV plugin's pool is RDMA because its own ConfigMap says isRdma: no false alarm.
TEST(AuditCliTest, SriovClusterIsCleanFromItsPluginConfig) {
  JsonRun r = Audit({"sriov.json"}, {"--fail-on", "info"});
  EXPECT_EQ(r.exit_code, 0) << r.report["findings"].dump(2);
  EXPECT_TRUE(r.report["findings"].empty());
  EXPECT_EQ(r.report["inventory"]["device_plugins"][0]["daemonset"],
            "kube-system/kube-sriov-device-plugin");
  EXPECT_EQ(r.report["inventory"]["plugin_config"]["rdma_resources"],
            json::array({"mellanox.com/ib_rdma"}));
}

TEST(AuditCliTest, DevicePluginCrashLoopingForMonths) {
  JsonRun r = Audit({"plugin-crashloop.json"});
  EXPECT_EQ(r.exit_code, 1);
  auto ds = FindingsOf(r.report, "daemonset.not-ready");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0]["severity"], "critical");
  EXPECT_EQ(ds[0]["subject"], "kube-system/rdma-shared-dp-ds");
  // Onset from the pods' Ready condition, not from the restart counters or the last exit.
  EXPECT_EQ(ds[0]["since"], "2026-03-03T00:00:02Z");
  EXPECT_TRUE(ds[0]["evidence"]["never_ready"].get<bool>());
  EXPECT_EQ(ds[0]["evidence"]["age_days"], 270);
  EXPECT_EQ(ds[0]["evidence"]["available"], 0);  // omitted from the JSON: defaults to 0
  std::string msg = ds[0]["message"];
  EXPECT_NE(msg.find("0 of 3 pods ready (missing on 100% of its nodes)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("never became ready"), std::string::npos);
  EXPECT_NE(msg.find("CrashLoopBackOff"), std::string::npos);
  EXPECT_NE(msg.find("k8s-rdma-shared-dev-plugin:v1.5.1"), std::string::npos);
  // The plugin's own pods are told once, by the DaemonSet finding.
  EXPECT_TRUE(FindingsOf(r.report, "pod.crashloop").empty());
  EXPECT_EQ(FindingsOf(r.report, "daemonset.coverage").size(), 3u);
  EXPECT_EQ(FindingsOf(r.report, "node.rdma.unadvertised").size(), 3u);
  EXPECT_EQ(r.report["findings"][0]["check"], "daemonset.not-ready");  // worst first
  // Grouped by subject: each node's two findings are next to each other.
  const json& f = r.report["findings"];
  for (size_t i = 1; i + 1 < f.size(); i += 2) {
    EXPECT_EQ(f[i]["subject"], f[i + 1]["subject"]) << f.dump(1);
  }
}

TEST(AuditCliTest, NodeExcludedByThePluginsSelector) {
  JsonRun r = Audit({"selector-excluded.json"});
  auto cov = FindingsOf(r.report, "daemonset.coverage");
  ASSERT_EQ(cov.size(), 1u);
  EXPECT_EQ(cov[0]["subject"], "gpu-node-04");
  EXPECT_NE(cov[0]["message"].get<std::string>().find("network.nvidia.com/rdma=true"),
            std::string::npos);
  EXPECT_EQ(cov[0]["since"], "2026-10-30T00:00:00Z");  // since the node joined
  auto unadvertised = FindingsOf(r.report, "node.rdma.unadvertised");
  ASSERT_EQ(unadvertised.size(), 1u);
  EXPECT_EQ(unadvertised[0]["subject"], "gpu-node-04");
}

TEST(AuditCliTest, ZeroRdmaNotReadyNodeAndCrashLoopingPod) {
  JsonRun r = Audit({"zero-rdma.json"});
  auto zero = FindingsOf(r.report, "node.rdma.unadvertised");
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_EQ(zero[0]["subject"], "gpu-node-02");
  EXPECT_EQ(zero[0]["evidence"]["rdma_resources"]["rdma/hca_shared_devices_a"], "0");
  auto nr = FindingsOf(r.report, "node.not-ready");
  ASSERT_EQ(nr.size(), 1u);
  EXPECT_EQ(nr[0]["since"], "2026-11-26T00:00:00Z");
  auto crash = FindingsOf(r.report, "pod.crashloop");
  ASSERT_EQ(crash.size(), 1u);
  EXPECT_EQ(crash[0]["subject"], "monitoring/exporter-b");
  EXPECT_EQ(crash[0]["since"], "2026-11-17T00:00:00Z");
  EXPECT_NE(crash[0]["message"].get<std::string>().find("12 days"), std::string::npos);
}

TEST(AuditCliTest, OptionsSelectFabricNodesPluginsAndResources) {
  // No plugin DaemonSet in a NodeList alone.
  JsonRun nodes = Audit({"nodes-only.json"});
  auto cluster = FindingsOf(nodes.report, "daemonset.coverage");
  ASSERT_EQ(cluster.size(), 1u);
  EXPECT_EQ(cluster[0]["subject"], "cluster");
  // Several files make one snapshot.
  JsonRun both = Audit({"nodes-only.json", "healthy.json"});
  EXPECT_EQ(both.report["inventory"]["nodes"], 7);
  // --fabric-nodes: only nodes with that label are fabric nodes.
  JsonRun sel =
      Audit({"selector-excluded.json"}, {"--fabric-nodes", "network.nvidia.com/rdma=true"});
  EXPECT_TRUE(sel.report["findings"].empty()) << sel.report["findings"].dump(2);
  // --device-plugin names a DaemonSet that is not there: the real one no longer counts.
  JsonRun named = Audit({"healthy.json"}, {"--device-plugin", "nvidia-network-operator/rdma"});
  EXPECT_EQ(FindingsOf(named.report, "daemonset.coverage")[0]["subject"], "cluster");
  // --rdma-resource adds a name; rdma/* is already known.
  JsonRun res = Audit({"zero-rdma.json"}, {"--rdma-resource", "example.com/fabric"});
  EXPECT_EQ(FindingsOf(res.report, "node.rdma.unadvertised").size(), 1u);
}

TEST(AuditCliTest, MultiNodeJobsThatMissTheFabric) {
  JsonRun healthy = Audit({"healthy.json"}, {"--fabric-network", "rdma-net", "--fail-on", "info"});
  EXPECT_TRUE(healthy.report["findings"].empty()) << healthy.report["findings"].dump(2);

  JsonRun r = Audit({"jobs-bad.json"}, {"--fabric-network", "rdma-net"});
  EXPECT_EQ(r.exit_code, 1);
  auto none = FindingsOf(r.report, "job.rdma.not-requested");
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0]["subject"], "kubeflow/ml/llama-ft");
  EXPECT_EQ(none[0]["since"], "2026-11-27T00:00:00Z");  // the job's first pod
  auto spread = FindingsOf(r.report, "job.placement.spread");
  ASSERT_EQ(spread.size(), 1u);
  EXPECT_EQ(spread[0]["evidence"]["label"], "cloud.google.com/gce-topology-block");
  EXPECT_EQ(spread[0]["evidence"]["nodes_per_block"]["blk-b"], 1);
  auto off = FindingsOf(r.report, "job.placement.non-fabric");
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0]["evidence"]["nodes"], json::array({"cpu-node-01"}));
  EXPECT_EQ(off[0]["message"], "1 of its 3 nodes has no RDMA fabric: cpu-node-01");

  auto env = FindingsOf(r.report, "job.nccl.fallback-env");
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0]["subject"], "job/ml/nccl-bench");
  EXPECT_EQ(env[0]["evidence"]["env"], json::array({"NCCL_IB_DISABLE=1"}));
  EXPECT_EQ(FindingsOf(r.report, "job.rdma.no-ipc-lock").size(), 1u);
  EXPECT_EQ(FindingsOf(r.report, "job.rdma.no-network").size(), 1u);
  EXPECT_EQ(FindingsOf(r.report, "job.storage.no-shared-volume").size(), 1u);

  // Without --fabric-network there is no network expectation.
  EXPECT_TRUE(FindingsOf(Audit({"jobs-bad.json"}).report, "job.rdma.no-network").empty());
  // --topology-label picks the label: kubernetes.io/os is the same on every node.
  EXPECT_TRUE(FindingsOf(Audit({"jobs-bad.json"}, {"--topology-label", "kubernetes.io/os"}).report,
                         "job.placement.spread")
                  .empty());
}

TEST(AuditCliTest, SummaryAndTable) {
  RunResult r = RunBinary(TOCSIN_BINARY, {"audit", "--from", kClusters + "plugin-crashloop.json",
                                          "--now", "2026-11-29T00:00:00Z", "--summary"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("SUMMARY"), std::string::npos);
  EXPECT_NE(r.out.find("FABRIC NODES"), std::string::npos);
}

TEST(AuditCliTest, BadInputIsAUsageErrorNamingTheProblem) {
  RunResult none = RunBinary(TOCSIN_BINARY, {"audit"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--from"), std::string::npos);
  RunResult missing = RunBinary(TOCSIN_BINARY, {"audit", "--from", "/no/such.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/no/such.json"), std::string::npos);
  RunResult now = RunBinary(TOCSIN_BINARY,
                            {"audit", "--from", kClusters + "healthy.json", "--now", "yesterday"});
  EXPECT_EQ(now.exit_code, 2);
  RunResult dp = RunBinary(
      TOCSIN_BINARY, {"audit", "--from", kClusters + "healthy.json", "--device-plugin", "noslash"});
  EXPECT_EQ(dp.exit_code, 2);
}

// Never "ok" when there was nothing to audit: an empty List, a lone ConfigMap, unrelated or
// kindless YAML are exit 2 naming what the input held; a pods-only snapshot warns that the
// node-level checks did not run.
TEST(AuditCliTest, InputWithNothingToAuditIsNeverOk) {
  char tmpl[] = "/tmp/tocsin-audit-empty-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  struct Case {
    std::string file, held;
  };
  for (const Case& c :
       {Case{write("empty.json", R"({"apiVersion":"v1","kind":"List","items":[]})"), "no objects"},
        Case{write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
             "1 ConfigMap"},
        Case{write("unrelated.yaml", "name: my-app\nreplicas: 3\n"), "(no kind)"}}) {
    SCOPED_TRACE(c.file);
    RunResult r = RunBinary(TOCSIN_BINARY, {"audit", "--from", c.file});
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.err.find("nothing to audit"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.held), std::string::npos) << r.err;
  }
  std::string pods = write(
      "pods.json",
      R"({"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod",)"
      R"("metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[]},"status":{}}]})");
  JsonRun run = RunTocsinJson({"audit", "-o", "json", "--from", pods});
  EXPECT_EQ(run.exit_code, 0);  // a warning, below the default --fail-on error
  auto incomplete = FindingsOf(run.report, "audit.input.incomplete");
  ASSERT_EQ(incomplete.size(), 1u) << run.report.dump(1);
  EXPECT_EQ(incomplete[0]["severity"], "warning");
  EXPECT_EQ(incomplete[0]["subject"], "nodes");
  std::filesystem::remove_all(dir);
}

// Issue 13: `audit --from FIFO` blocked. Refused at once, exit 2, naming the path.
TEST(AuditCliTest, AFifoSnapshotIsRefusedNotWaitedFor) {
  std::string dir = testing::TempDir("audit-fifo");
  std::string fifo = dir + "/snapshot.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = testing::RunBinaryWithin(60, TOCSIN_BINARY, {"audit", "--from", fifo});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(fifo + ": not a regular file (a FIFO)"), std::string::npos) << r.err;
  ::unlink(fifo.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace tocsin
