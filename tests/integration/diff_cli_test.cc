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
