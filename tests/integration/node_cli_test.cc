// `tocsin node --root <fixture> -o json` on every fixture node, asserted on the JSON report.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "agent_process.h"
#include "run_binary.h"

namespace tocsin {
namespace {

using nlohmann::json;
using testing::FindingsOf;
using testing::JsonRun;
using testing::RunBinary;
using testing::RunBinaryWithin;
using testing::RunResult;
using testing::RunTocsinJson;

const std::string kNodes = std::string(TOCSIN_SOURCE_DIR) + "/testdata/nodes/";
const std::string kProfiles = std::string(TOCSIN_SOURCE_DIR) + "/testdata/profiles/";

JsonRun Node(const std::string& fixture, std::vector<std::string> extra = {},
             std::vector<std::string> env = {}) {
  std::vector<std::string> args = {"node", "--root", kNodes + fixture, "-o", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunTocsinJson(args, env);
}

// False alarms are bugs: a healthy node has nothing at warning or above.
void ExpectNoWarnings(const json& report) {
  for (const auto& f : report["findings"]) {
    EXPECT_EQ(f["severity"], "info") << f.dump();
  }
}

TEST(NodeCliTest, ReportContract) {
  JsonRun r = Node("ib-healthy");
  const json& j = r.report;
  for (const char* key :
       {"tocsin_version", "command", "host", "generated_at", "status", "findings", "inventory"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["command"], "node");
  EXPECT_EQ(j["host"], "gpu-node-01");
  std::string at = j["generated_at"];
  EXPECT_EQ(at.size(), 20u);
  EXPECT_EQ(at.back(), 'Z');
}

TEST(NodeCliTest, HealthyIbNodeIsCleanWithAndWithoutExpectations) {
  JsonRun plain = Node("ib-healthy");
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(plain.report["status"], "ok");
  ExpectNoWarnings(plain.report);

  JsonRun strict =
      Node("ib-healthy", {"--profile", kProfiles + "h100-ib.yaml", "--fail-on", "warning"});
  EXPECT_EQ(strict.exit_code, 0) << strict.report["findings"].dump(2);
  ExpectNoWarnings(strict.report);
}

TEST(NodeCliTest, HealthyIbInventory) {
  const json inv = Node("ib-healthy").report["inventory"];
  const json& devs = inv["rdma"]["devices"];
  ASSERT_EQ(devs.size(), 4u);
  const json& d0 = devs[0];
  EXPECT_EQ(d0["name"], "mlx5_0");
  EXPECT_EQ(d0["hca_type"], "MT4129");
  EXPECT_EQ(d0["fw_ver"], "28.39.1002");
  EXPECT_EQ(d0["node_guid"], "0c42:a103:00e4:9b00");
  EXPECT_EQ(d0["pci_address"], "0000:05:00.0");  // through the device symlink
  EXPECT_EQ(d0["numa_node"], 0);
  EXPECT_EQ(d0["netdevs"], json::array({"ib0"}));
  const json& p = d0["ports"][0];
  EXPECT_EQ(p["state"], "4: ACTIVE");
  EXPECT_EQ(p["phys_state"], "5: LinkUp");
  EXPECT_EQ(p["rate_gbps"], 400.0);
  EXPECT_EQ(p["width"], 4);
  EXPECT_EQ(p["speed"], "NDR");
  EXPECT_EQ(p["link_layer"], "InfiniBand");
  EXPECT_EQ(p["lid"], "0x1a");
  ASSERT_EQ(p["gids"].size(), 1u);  // zero GIDs are skipped
  EXPECT_EQ(p["gids"][0]["gid"], "fe80:0000:0000:0000:0c42:a103:00e4:9b00");
  EXPECT_EQ(p["counters"]["symbol_error"], 0);
  EXPECT_EQ(p["xmit_bytes"], 91231232345ull * 4);  // octets / 4 in sysfs

  // 8 GPUs; the 4 NVSwitches (NVIDIA, class 0x0680) are not GPUs.
  EXPECT_EQ(inv["gpus"]["count"], 8);
  EXPECT_EQ(inv["gpus"]["devices"][0]["numa_node"], 0);
  EXPECT_EQ(inv["gpus"]["nvml"]["status"], "skipped");
  for (const auto& a : inv["gpu_nic_affinity"]) EXPECT_EQ(a["path_type"], "PIX") << a.dump();
  EXPECT_EQ(inv["gpu_nic_affinity"][0]["nearest_nic"], "mlx5_0");
  EXPECT_EQ(inv["gpu_nic_affinity"][7]["nearest_nic"], "mlx5_3");

  // Network interfaces: IPoIB with its PCI/NUMA, loopback virtual with unknown speed.
  std::set<std::string> names;
  for (const auto& n : inv["netdevs"]) {
    names.insert(n["name"]);
    if (n["name"] == "ib3") {
      EXPECT_EQ(n["numa_node"], 1);
      EXPECT_EQ(n["type"], 32);
    }
    if (n["name"] == "lo") {
      EXPECT_TRUE(n["virtual"]);
      EXPECT_TRUE(n["speed_mbps"].is_null());
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"eno1", "ib0", "ib1", "ib2", "ib3", "lo"}));

  // Lustre 2.17 layout (debugfs): mount source, imports (IDLE is healthy), llite stats.
  const json& st = inv["storage"];
  ASSERT_EQ(st["shared_mounts"].size(), 2u);
  json lustre;
  for (const auto& m : st["shared_mounts"]) {
    if (m["fstype"] == "lustre") lustre = m;
  }
  EXPECT_EQ(lustre["mount_point"], "/mnt/lustre");
  EXPECT_EQ(lustre["lustre"]["fsname"], "testfs");
  EXPECT_EQ(lustre["lustre"]["mgs_nodes"][0], json::array({"10.0.0.1@o2ib", "10.1.0.1@tcp"}));
  ASSERT_EQ(st["lustre_devices"].size(), 3u);
  EXPECT_EQ(st["lustre_devices"][0]["dir"].get<std::string>().rfind("/sys/kernel/debug/lustre/", 0),
            0u);
  EXPECT_EQ(st["llite_stats"]["testfs-ffff8c5a4b6e9000"]["counters"]["read_bytes"]["sum"],
            536870912);
}

TEST(NodeCliTest, RoceNodeIsCleanAndKnowsItsGids) {
  JsonRun r = Node("roce", {"--expect-link-layer", "Ethernet", "--expect-rate", "100",
                            "--expect-rdma-ports", "2", "--expect-gpus", "4"});
  EXPECT_EQ(r.exit_code, 0);
  ExpectNoWarnings(r.report);
  const json& port = r.report["inventory"]["rdma"]["devices"][1]["ports"][0];
  EXPECT_EQ(port["link_layer"], "Ethernet");
  EXPECT_EQ(port["lid"], "0x0");
  ASSERT_EQ(port["gids"].size(), 4u);
  EXPECT_EQ(port["gids"][3]["type"], "RoCE v2");
  EXPECT_EQ(port["gids"][3]["ndev"], "ens2f0np0");
  EXPECT_EQ(port["gids"][3]["gid"], "0000:0000:0000:0000:0000:ffff:0a64:0101");

  JsonRun wrong = Node("roce", {"--expect-link-layer", "InfiniBand"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(FindingsOf(wrong.report, "rdma.port.link-layer").size(), 2u);
}

TEST(NodeCliTest, FullSizeNodeIsCleanWithEveryGpuNextToItsOwnNic) {
  JsonRun r = Node("ib-8x8", {"--expect-rdma-ports", "8", "--expect-rate", "400", "--expect-gpus",
                              "8", "--expect-mount", "/mnt/lustre:lustre"});
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(1);
  ExpectNoWarnings(r.report);
  const json& affinity = r.report["inventory"]["gpu_nic_affinity"];
  ASSERT_EQ(affinity.size(), 8u);
  std::set<std::string> nics;
  for (const auto& a : affinity) {
    nics.insert(a["nearest_nic"].get<std::string>());
    EXPECT_EQ(a["path_type"], "PIX") << a;
  }
  EXPECT_EQ(nics.size(), 8u) << affinity.dump(1);  // one HCA per GPU, under the same switch
}

TEST(NodeCliTest, PortDownDegradedRateAndErrors) {
  JsonRun r = Node("ib-port-down");
  EXPECT_EQ(r.exit_code, 1);
  auto down = FindingsOf(r.report, "rdma.port.down");
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0]["subject"], "mlx5_2/1");
  EXPECT_EQ(down[0]["severity"], "error");
  EXPECT_EQ(down[0]["evidence"]["phys_state"], "2: Polling");
  EXPECT_TRUE(down[0]["since"].is_null());

  // Without --expect-rate the 2X port is slower than its peers: a warning.
  auto rate = FindingsOf(r.report, "rdma.port.rate");
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0]["subject"], "mlx5_3/1");
  EXPECT_EQ(rate[0]["severity"], "warning");
  EXPECT_EQ(rate[0]["evidence"]["width"], 2);

  auto errors = FindingsOf(r.report, "rdma.port.errors");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["evidence"]["symbol_error"], 1234);
  EXPECT_EQ(errors[0]["evidence"]["saturated"], json::array({"link_downed"}));
  EXPECT_NE(errors[0]["message"].get<std::string>().find("link_downed>=255"), std::string::npos);

  JsonRun strict = Node("ib-port-down", {"--expect-rate", "400", "--expect-rdma-ports", "4"});
  rate = FindingsOf(strict.report, "rdma.port.rate");
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0]["severity"], "error");
  auto missing = FindingsOf(strict.report, "rdma.device.missing");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0]["evidence"]["active_ports"], 3);

  // A floor the 2X port meets does not hide that it lost half its lanes.
  JsonRun met = Node("ib-port-down", {"--expect-rate", "200"});
  rate = FindingsOf(met.report, "rdma.port.rate");
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0]["subject"], "mlx5_3/1");
  EXPECT_EQ(rate[0]["severity"], "warning");
  EXPECT_EQ(rate[0]["evidence"]["peer_rate_gbps"], 400);
}

TEST(NodeCliTest, FailOnAndObserveOnlyChooseTheExitCode) {
  EXPECT_EQ(Node("ib-port-down", {"--observe-only"}).exit_code, 0);
  EXPECT_EQ(Node("ib-port-down", {"--fail-on", "critical"}).exit_code, 0);
  EXPECT_EQ(Node("empty", {"--fail-on", "info"}).exit_code, 1);
  EXPECT_EQ(Node("empty").exit_code, 0);
}

TEST(NodeCliTest, GpusOnTheOtherNumaNode) {
  JsonRun r = Node("numa-mismatch");
  EXPECT_EQ(r.exit_code, 1);
  auto aff = FindingsOf(r.report, "gpu.nic.affinity");
  ASSERT_EQ(aff.size(), 8u);
  for (const auto& f : aff) {
    EXPECT_EQ(f["severity"], "error");
    EXPECT_EQ(f["evidence"]["path_type"], "SYS");
    EXPECT_EQ(f["evidence"]["gpu_numa_node"], 0);
    EXPECT_EQ(f["evidence"]["nic_numa_node"], 1);
  }
  EXPECT_EQ(aff[0]["subject"], "0000:03:00.0");  // the GPU's PCI address
}

TEST(NodeCliTest, EvictedLustreOstWithOnset) {
  JsonRun r = Node("lustre-evicted", {"--expect-mount", "/mnt/lustre:lustre"});
  EXPECT_EQ(r.exit_code, 1);
  auto imp = FindingsOf(r.report, "lustre.import.state");
  ASSERT_EQ(imp.size(), 2u);  // FULL and IDLE imports are healthy
  EXPECT_EQ(imp[0]["subject"], "testfs-OST0001-osc-ffff8c5a4b6e9000");
  EXPECT_EQ(imp[0]["severity"], "error");
  EXPECT_EQ(imp[0]["since"], "2025-11-28T03:20:00Z");  // the DISCONN after the last FULL
  EXPECT_EQ(imp[0]["evidence"]["current_connection"], "10.0.0.2@o2ib");
  EXPECT_EQ(imp[0]["evidence"]["rpcs_timeouts"], 14);
  // OST0003's import cannot be read: its state file says DISCONN, and that is reported.
  EXPECT_EQ(imp[1]["subject"], "testfs-OST0003-osc-ffff8c5a4b6e9000");
  EXPECT_EQ(imp[1]["severity"], "error");
  EXPECT_EQ(imp[1]["evidence"]["state"], "DISCONN");
  EXPECT_NE(imp[1]["evidence"]["path"].get<std::string>().find("/state"), std::string::npos);
  EXPECT_TRUE(imp[1]["evidence"].contains("import_error"));
  EXPECT_TRUE(FindingsOf(r.report, "storage.mount.missing").empty());
  EXPECT_EQ(r.report["inventory"]["storage"]["lustre_devices"].size(), 5u);
}

// A Lustre OSS mounts its OSTs with type lustre: those are not client mounts without imports.
TEST(NodeCliTest, LustreServerTargetsAreNotClients) {
  JsonRun r = Node("lustre-server");
  EXPECT_EQ(r.exit_code, 0);
  ExpectNoWarnings(r.report);
  EXPECT_TRUE(FindingsOf(r.report, "lustre.import.state").empty());
  EXPECT_TRUE(r.report["inventory"]["storage"]["shared_mounts"].empty());
  EXPECT_EQ(r.report["inventory"]["storage"]["lustre_targets"].size(), 2u);
}

TEST(NodeCliTest, ExpectedMountsMissingOrWrongType) {
  JsonRun r =
      Node("lustre-evicted", {"--expect-mount", "/scratch", "--expect-mount", "/mnt/lustre:nfs4"});
  auto missing = FindingsOf(r.report, "storage.mount.missing");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0]["subject"], "/scratch");
  EXPECT_EQ(missing[0]["evidence"]["covering_mount"], "/");
  EXPECT_EQ(missing[0]["evidence"]["covering_fstype"], "ext4");
  auto type = FindingsOf(r.report, "storage.mount.type");
  ASSERT_EQ(type.size(), 1u);
  EXPECT_EQ(type[0]["evidence"]["fstype"], "lustre");
  EXPECT_EQ(type[0]["evidence"]["expected_fstype"], "nfs4");
}

TEST(NodeCliTest, EmptyNodeIsInfoWithoutExpectationsAndErrorWithThem) {
  JsonRun r = Node("empty");
  EXPECT_EQ(r.exit_code, 0);
  ExpectNoWarnings(r.report);
  EXPECT_EQ(FindingsOf(r.report, "rdma.device.missing").size(), 1u);
  EXPECT_EQ(FindingsOf(r.report, "gpu.count").size(), 1u);
  EXPECT_FALSE(r.report["inventory"]["rdma"]["present"]);

  JsonRun strict = Node("empty", {"--expect-rdma-ports", "1", "--expect-gpus", "8"});
  EXPECT_EQ(strict.exit_code, 1);
  auto rdma = FindingsOf(strict.report, "rdma.device.missing");
  ASSERT_EQ(rdma.size(), 1u);
  EXPECT_EQ(rdma[0]["severity"], "error");
  EXPECT_NE(rdma[0]["message"].get<std::string>().find("no RDMA driver"), std::string::npos);
  auto gpus = FindingsOf(strict.report, "gpu.count");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0]["evidence"]["found"], 0);
}

TEST(NodeCliTest, MalformedInputGivesUnknownNotCrashOrHealthy) {
  JsonRun r = Node("malformed", {"--expect-mount", "/mnt/lustre:lustre"});
  EXPECT_EQ(r.exit_code, 0);  // only warnings; the default --fail-on is error
  EXPECT_EQ(r.report["status"], "warning");
  std::set<std::string> unknown_paths;
  for (const auto& f : r.report["findings"]) {
    if (f["evidence"].contains("result") && f["evidence"]["result"] == "unknown") {
      unknown_paths.insert(f["evidence"]["path"]);
    }
  }
  for (const char* path : {
           "/sys/class/infiniband/mlx5_0/ports/1/state",
           "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error",
           "/sys/class/infiniband/mlx5_1/ports/1/phys_state",
           "/proc/fs/lustre/osc/testfs-OST0000-osc-ffff8c5a4b6e9000/import",
       }) {
    EXPECT_TRUE(unknown_paths.count(path)) << path;
  }
  // The dangling device symlink and the malformed mountinfo line are kept as read errors.
  const json& mlx5_1 = r.report["inventory"]["rdma"]["devices"][1];
  EXPECT_TRUE(mlx5_1["pci_address"].is_null());
  EXPECT_EQ(mlx5_1["read_errors"][0]["field"], "device");
  EXPECT_FALSE(r.report["inventory"]["storage"]["read_errors"].empty());
  // The mount behind the bad line is still found.
  EXPECT_TRUE(FindingsOf(r.report, "storage.mount.missing").empty());
}

// Issue 13: a FIFO where a file belongs (a sysfs attribute, --profile) hung `node`. It is read
// without blocking: a sysfs one is an unknown finding naming the path, a user-given one exit 2.
TEST(NodeCliTest, AFifoWhereAFileBelongsIsRefusedNotWaitedFor) {
  std::string root = testing::CopyFixtureNode("ib-healthy");
  std::string state =
      std::filesystem::canonical(root + "/sys/class/infiniband/mlx5_1/ports/1").string() + "/state";
  std::filesystem::remove(state);
  ASSERT_EQ(::mkfifo(state.c_str(), 0600), 0);
  RunResult r = RunBinaryWithin(60, TOCSIN_BINARY, {"node", "--root", root, "-o", "json"});
  ASSERT_NE(r.exit_code, 137) << "node blocked on the FIFO";
  bool named = false;
  json report = json::parse(r.out);
  for (const auto& f : report["findings"]) {
    named |=
        f["evidence"].value("result", "") == "unknown" &&
        f["evidence"].value("error", "").find("not a regular file (a FIFO)") != std::string::npos;
  }
  EXPECT_TRUE(named) << r.out;

  std::string profile = root + "/profile.yaml";
  ASSERT_EQ(::mkfifo(profile.c_str(), 0600), 0);
  r = RunBinaryWithin(60, TOCSIN_BINARY, {"node", "--root", root, "--profile", profile});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--profile " + profile + ": not a regular file (a FIFO)"), std::string::npos)
      << r.err;
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace tocsin
