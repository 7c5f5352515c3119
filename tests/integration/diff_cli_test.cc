// `tocsin diff` and `tocsin snapshot` on the staging/production pairs of testdata/drift
// (tools/make_drift_fixtures.py).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "run_binary.h"

namespace tocsin {
namespace {

using nlohmann::json;
using testing::JsonRun;
using testing::RunBinary;
using testing::RunResult;
using testing::RunTocsinJson;
using testing::ScopedTempDir;

const std::string kDrift = std::string(TOCSIN_SOURCE_DIR) + "/testdata/drift/";

JsonRun Diff(const std::string& a, const std::string& b, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"diff", "-o", "json", kDrift + a, kDrift + b};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunTocsinJson(args);
}

RunResult DiffText(std::vector<std::string> args) {
  args.insert(args.begin(), "diff");
  return RunBinary(TOCSIN_BINARY, args);
}

std::map<std::string, std::string> Found(const json& report) {
  std::map<std::string, std::string> out;
  for (const auto& f : report["findings"]) {
    out[f["check"].get<std::string>() + " | " + f["subject"].get<std::string>()] =
        f["severity"].get<std::string>();
  }
  return out;
}

// Identical snapshots, and snapshots that differ only in volatile fields, node names and node
// counts: nothing.
TEST(DiffCliTest, IdenticalAndVolatileOnlyPairsHaveNoFindings) {
  for (const char* b : {"staging-copy.json", "prod-volatile.json", "staging.json"}) {
    JsonRun r = Diff("staging.json", b, {"--fail-on", "info"});
    EXPECT_EQ(r.exit_code, 0) << b << r.report["findings"].dump(2);
    EXPECT_TRUE(r.report["findings"].empty()) << b;
    EXPECT_EQ(r.report["status"], "ok");
    EXPECT_GT(r.report["inventory"]["items"].size(), 40u);
  }
  JsonRun r = Diff("prod-volatile.json", "staging.json", {"--fail-on", "info"});
  EXPECT_TRUE(r.report["findings"].empty()) << r.report["findings"].dump(2);
}

// Every seeded difference of tools/make_drift_fixtures.py (SEEDED), and nothing else.
TEST(DiffCliTest, SeededDifferencesExactlyWithTheirSeverities) {
  JsonRun r = Diff("staging.json", "prod.json");
  EXPECT_EQ(r.exit_code, 1);
  const std::string cls = "class p5.48xlarge/NVIDIA-H100-80GB-HBM3: ";
  std::map<std::string, std::string> want = {
      {"drift.rdma.resource | pool rdma/hca_shared_devices_a: rdmaHcaMax", "error"},
      {"drift.rdma.resource | " + cls + "rdma rdma/hca_shared_devices_a", "error"},
      {"drift.plugin.image | device plugin k8s-rdma-shared-dev-plugin", "warning"},
      {"drift.plugin.config | pool rdma/hca_shared_devices_a: selectors", "warning"},
      {"drift.network.attachment | network rdma-net: master", "error"},
      {"drift.network.attachment | network rdma-net: mtu", "error"},
      {"drift.network.attachment | network rdma-net: ipam", "warning"},
      {"drift.network.sriov-policy | sriov policy sriov_ib: numVfs", "error"},
      {"drift.template.nccl | template PyTorchJob/llm-pretrain: NCCL_IB_DISABLE", "error"},
      {"drift.template.resources | template PyTorchJob/llm-pretrain: requests nvidia.com/gpu",
       "warning"},
      {"drift.template.resources | template PyTorchJob/llm-pretrain: limits nvidia.com/gpu",
       "warning"},
      {"drift.template.nccl | template CronJob/nightly-allreduce: NCCL_SOCKET_IFNAME", "warning"},
      {"drift.template.env | template CronJob/nightly-allreduce: UCX_TLS", "info"},
      {"drift.node.driver | " + cls + "gpu driver", "warning"},
      {"drift.node.driver | NicClusterPolicy ofedDriver", "warning"},
      {"drift.node.firmware | " + cls + "hca firmware", "warning"},
      {"drift.class.mixed | " + cls + "hca firmware", "warning"},
      {"drift.node.software | " + cls + "kernel", "info"},
      {"drift.node.software | " + cls + "label feature.node.kubernetes.io/kernel-version.full",
       "info"},
      {"drift.class.missing | class m5.2xlarge", "warning"},
  };
  EXPECT_EQ(Found(r.report), want) << r.report["findings"].dump(2);
  for (const auto& f : r.report["findings"]) {
    const json& e = f["evidence"];
    if (f["check"] == "drift.class.mixed") {
      EXPECT_EQ(e["outlier_count"], 1);
      EXPECT_EQ(e["outliers"][0]["node"], "prd-gpu-00001");
      continue;
    }
    EXPECT_TRUE(e.contains("a") && e.contains("b")) << f.dump();
    EXPECT_EQ(e["source_a"], kDrift + "staging.json");
    EXPECT_EQ(e["source_b"], kDrift + "prod.json");
  }
  // The consequence, said.
  for (const auto& f : r.report["findings"]) {
    if (f["subject"] == cls + "rdma rdma/hca_shared_devices_a") {
      EXPECT_NE(f["message"].get<std::string>().find("will not schedule"), std::string::npos);
    }
  }
}

TEST(DiffCliTest, FailOnAndObserveOnly) {
  EXPECT_EQ(Diff("staging.json", "prod.json", {"--fail-on", "critical"}).exit_code, 0);
  EXPECT_EQ(Diff("staging.json", "prod.json", {"--observe-only"}).exit_code, 0);
  EXPECT_EQ(Diff("staging.json", "prod-volatile.json", {"--fail-on", "info"}).exit_code, 0);
}

TEST(DiffCliTest, AcceptedUntilTheyExpire) {
  ScopedTempDir dir("diff");
  std::string accept = dir.path() + "/accept.yaml";
  std::ofstream(accept) << "accept:\n"
                           "  - match: {check: \"drift.network.*\"}\n"
                           "    reason: prod moves to the new fabric VLAN first\n"
                           "    expires: 2026-12-31\n"
                           "  - match: drift.rdma.resource\n"
                           "    reason: prod runs twice the pods per HCA\n"
                           "    expires: 2026-11-30\n";
  JsonRun before =
      Diff("staging.json", "prod.json", {"--accept", accept, "--now", "2026-11-29T00:00:00Z"});
  int accepted = 0;
  for (const auto& f : before.report["findings"]) {
    std::string check = f["check"];
    if (check.starts_with("drift.network.") || check == "drift.rdma.resource") {
      EXPECT_EQ(f["severity"], "info") << f.dump();
      EXPECT_TRUE(f["evidence"].contains("accepted"));
      ++accepted;
    }
  }
  EXPECT_EQ(accepted, 6);
  EXPECT_EQ(before.exit_code, 1);  // the template's NCCL_IB_DISABLE is still an error
  JsonRun after =
      Diff("staging.json", "prod.json", {"--accept", accept, "--now", "2026-12-01T00:00:00Z"});
  for (const auto& f : after.report["findings"]) {
    if (f["check"] == "drift.rdma.resource") {
      EXPECT_EQ(f["severity"], "error");
      EXPECT_EQ(f["evidence"]["acceptance_expired"], "2026-11-30T23:59:59Z");
    }
  }
  std::ofstream(dir.path() + "/bad.yaml") << "- match: x\n  reason: r\n";
  RunResult bad = DiffText(
      {kDrift + "staging.json", kDrift + "prod.json", "--accept", dir.path() + "/bad.yaml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("entry 1: no expires"), std::string::npos) << bad.err;
}

TEST(DiffCliTest, TableJunitAndMarkdown) {
  RunResult table = DiffText({kDrift + "staging.json", kDrift + "prod.json"});
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_TRUE(
      testing::InOrder(table.out, {"SIDES", "NODES", "DEVICE PLUGIN", "NETWORKS", "TEMPLATES"}))
      << table.out;
  RunResult junit = DiffText({"-o", "junit", kDrift + "staging.json", kDrift + "prod.json"});
  EXPECT_EQ(junit.exit_code, 1);
  EXPECT_EQ(junit.out.rfind("<?xml", 0), 0u);
  EXPECT_NE(junit.out.find("<testsuite name=\"tocsin.diff.networks\""), std::string::npos);
  EXPECT_NE(junit.out.find("<failure type=\"drift.network.attachment\""), std::string::npos);
  RunResult clean =
      DiffText({"-o", "junit", kDrift + "staging.json", kDrift + "staging-copy.json"});
  EXPECT_EQ(clean.exit_code, 0);
  EXPECT_NE(clean.out.find(" failures=\"0\">"), std::string::npos) << clean.out;
  RunResult md = DiffText({"-o", "markdown", kDrift + "staging.json", kDrift + "prod.json"});
  EXPECT_NE(md.out.find("#### templates"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| error | `drift.template.nccl` |"), std::string::npos) << md.out;
}

TEST(DiffCliTest, UsageAndInputErrors) {
  EXPECT_EQ(DiffText({kDrift + "staging.json"}).exit_code, 2);
  EXPECT_EQ(DiffText({kDrift + "staging.json", kDrift + "nope.json"}).exit_code, 2);
  EXPECT_EQ(DiffText({"-o", "xml", kDrift + "staging.json", kDrift + "prod.json"}).exit_code, 2);
  EXPECT_EQ(DiffText({"--now", "later", kDrift + "staging.json", kDrift + "prod.json", "--accept",
                      kDrift + "staging.json"})
                .exit_code,
            2);
  ScopedTempDir dir("diff");
  std::ofstream(dir.path() + "/trunc.json") << R"({"kind":"List","items":[{"kind":"Node",)";
  RunResult r = DiffText({kDrift + "staging.json", dir.path() + "/trunc.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trunc.json"), std::string::npos) << r.err;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string WriteJson(const ScopedTempDir& dir, const std::string& name, const json& doc) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << doc.dump();
  return path;
}

// README: nodes without the agent's tocsin.io/fabric annotation are compared without those
// facts; an unreadable one is a drift.node.fabric warning naming the node, not drift.
TEST(DiffCliTest, NodesWithoutFabricFactsAreComparedWithoutThem) {
  ScopedTempDir dir("diff");
  json doc = ReadJson(kDrift + "staging.json");
  for (auto& item : doc["items"]) {
    if (item["kind"] == "Node") item["metadata"]["annotations"].erase("tocsin.io/fabric");
  }
  std::string bare = WriteJson(dir, "bare.json", doc);
  for (auto [a, b] : {std::pair{kDrift + "staging.json", bare}, {bare, kDrift + "staging.json"}}) {
    JsonRun r = RunTocsinJson({"diff", "-o", "json", "--fail-on", "info", a, b});
    EXPECT_EQ(r.exit_code, 0) << r.report["findings"].dump(2);
    EXPECT_TRUE(r.report["findings"].empty());
  }
  std::string node;
  for (auto& item : doc["items"]) {
    if (item["kind"] != "Node" || !item["metadata"].contains("labels") ||
        !item["metadata"]["labels"].contains("nvidia.com/gpu.product")) {
      continue;
    }
    item["metadata"]["annotations"]["tocsin.io/fabric"] = "{not json";
    node = item["metadata"]["name"];
    break;
  }
  ASSERT_FALSE(node.empty());
  JsonRun r = RunTocsinJson({"diff", "-o", "json", "--fail-on", "info", kDrift + "staging.json",
                             WriteJson(dir, "one-unreadable.json", doc)});
  ASSERT_EQ(r.report["findings"].size(), 1u) << r.report["findings"].dump(2);
  const json& f = r.report["findings"][0];
  EXPECT_EQ(f["check"], "drift.node.fabric");
  EXPECT_EQ(f["severity"], "warning");
  EXPECT_EQ(f["evidence"]["nodes"][0]["node"], node);
  EXPECT_EQ(r.exit_code, 1);  // --fail-on info
}

// An empty List (a wrong context or namespace): not compared against, the side named.
TEST(DiffCliTest, AnEmptySideIsOnlyDriftInputEmpty) {
  ScopedTempDir dir("diff");
  std::string empty = WriteJson(dir, "empty.json", {{"kind", "List"}, {"items", json::array()}});
  JsonRun r = RunTocsinJson({"diff", "-o", "json", kDrift + "staging.json", empty});
  EXPECT_EQ(r.exit_code, 1) << r.report["findings"].dump(2);  // not compared: a gate fails
  std::map<std::string, std::string> want = {
      {"drift.input.empty | side B (" + empty + ")", "error"}};
  EXPECT_EQ(Found(r.report), want);
  r = RunTocsinJson({"diff", "-o", "json", empty, empty});
  want = {{"drift.input.empty | side A (" + empty + ")", "error"},
          {"drift.input.empty | side B (" + empty + ")", "error"}};
  EXPECT_EQ(Found(r.report), want);
}

// One <failure> per test case, and the counts say so (a class's firmware has two findings).
TEST(DiffCliTest, JunitFailuresCountTheFailureElements) {
  RunResult junit =
      DiffText({"-o", "junit", "--fail-on", "info", kDrift + "staging.json", kDrift + "prod.json"});
  EXPECT_EQ(junit.exit_code, 1);
  size_t elements = 0;
  for (size_t p = junit.out.find("<failure "); p != std::string::npos;
       p = junit.out.find("<failure ", p + 1)) {
    ++elements;
  }
  size_t at = junit.out.find("<testsuites ");
  size_t f = junit.out.find(" failures=\"", at) + 11;
  EXPECT_EQ(junit.out.substr(f, junit.out.find('"', f) - f), std::to_string(elements)) << junit.out;
  EXPECT_GT(elements, 10u);
  EXPECT_NE(junit.out.find("<failure type=\"drift.class.mixed drift.node.firmware\""),
            std::string::npos)
      << junit.out;
}

TEST(DiffCliTest, BadInputIsAClearErrorInBoundedTime) {
  ScopedTempDir dir("diff");
  // Endless stdin: refused at the cap (exit 2), not read forever.
  RunResult r = RunBinary(TOCSIN_BINARY, {"diff", kDrift + "staging.json", "-"}, {}, "/dev/zero");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stdin: more than 1073741824 bytes"), std::string::npos) << r.err;
  r = RunBinary(TOCSIN_BINARY, {"diff", "-", "-"}, {}, kDrift + "staging.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stdin (-) can be one side only"), std::string::npos) << r.err;
  std::ofstream(dir.path() + "/garbage.json") << "%% not: [json\n";
  r = DiffText({kDrift + "staging.json", dir.path() + "/garbage.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("neither JSON"), std::string::npos) << r.err;
  std::ofstream(dir.path() + "/accept.yaml")
      << "- match: drift.node.*\n  subject: class x\n  reason: r\n  expires: 2099-01-01\n";
  r = DiffText(
      {kDrift + "staging.json", kDrift + "prod.json", "--accept", dir.path() + "/accept.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("entry 1: unknown key \"subject\""), std::string::npos) << r.err;
}

// `tocsin snapshot --from` merges kubectl outputs into one file that diff and audit read back.
TEST(DiffCliTest, SnapshotMergesFilesIntoOneThatReadsBack) {
  ScopedTempDir dir("diff");
  std::string one = dir.path() + "/one.json";
  RunResult r =
      RunBinary(TOCSIN_BINARY, {"snapshot", "--from", kDrift + "staging.json", "--out", one});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  JsonRun same =
      RunTocsinJson({"diff", "-o", "json", "--fail-on", "info", kDrift + "staging.json", one});
  EXPECT_EQ(same.exit_code, 0) << same.report.dump(2);
  EXPECT_TRUE(same.report["findings"].empty());
  std::string two = dir.path() + "/two.json";
  r = RunBinary(TOCSIN_BINARY,
                {"snapshot", "--from", kDrift + "staging.json", "--from",
                 std::string(TOCSIN_SOURCE_DIR) + "/testdata/clusters/healthy.json", "--out", two});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("objects written"), std::string::npos);
  JsonRun a =
      RunTocsinJson({"audit", "-o", "json", "--from", two, "--now", "2026-11-29T00:00:00Z"});
  EXPECT_EQ(a.report["inventory"]["nodes"], 8) << a.report.dump(2);
  EXPECT_EQ(RunBinary(TOCSIN_BINARY, {"snapshot", "--from", kDrift + "nope.json"}).exit_code, 2);
}

}  // namespace
}  // namespace tocsin
