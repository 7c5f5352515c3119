// Exit codes and messages for usage errors, and the NVML path through a fake libnvidia-ml.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "run_binary.h"

namespace tocsin {
namespace {

using nlohmann::json;
using testing::RunBinary;
using testing::RunResult;

const std::string kHealthy = std::string(TOCSIN_SOURCE_DIR) + "/testdata/nodes/ib-healthy";

RunResult Tocsin(std::vector<std::string> args, std::vector<std::string> env = {}) {
  return RunBinary(TOCSIN_BINARY, args, env);
}

std::string TempFile(const std::string& text) {
  char path[] = "/tmp/tocsin-profile-XXXXXX";
  int fd = ::mkstemp(path);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(CliUsageTest, HelpAndVersionExitZero) {
  RunResult help = Tocsin({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("node"), std::string::npos);
  RunResult node_help = Tocsin({"node", "--help"});
  EXPECT_EQ(node_help.exit_code, 0);
  EXPECT_NE(node_help.out.find("--expect-rdma-ports"), std::string::npos);
  RunResult version = Tocsin({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("tocsin "), std::string::npos);
}

// nan, inf, 1e300 and waits below a millisecond became undefined casts and false findings ("the
// filesystem stopped answering"): every number flag refuses them, naming the flag and its range in
// words, never CLI11's 300-digit bounds.
TEST(CliUsageTest, NumberFlagsRefuseNanInfHugeAndSubMillisecond) {
  const std::vector<std::vector<std::string>> cases = {
      {"node", "--nvml-timeout"},         {"node", "--expect-rate"},
      {"nccl", "--min-busbw"},            {"audit", "--request-timeout"},
      {"bench", "net", "--timeout"},      {"bench", "net", "--min-busbw"},
      {"bench", "net", "--straggler-ratio"}, {"bench", "storage", "--op-timeout"},
      {"bench", "storage", "--timeout"},  {"bench", "storage", "--max-fsync-p99-ms"},
      {"agent", "--probe-max-fsync-ms"},  {"agent", "--stale-factor"},
      {"agent", "--fabric-idle-below"}};
  for (const auto& c : cases) {
    for (const std::string bad : {"nan", "inf", "-inf", "1e300", "0.0001", "-1", "12abc"}) {
      if (bad == "0.0001" && c.back().find("timeout") == std::string::npos) continue;
      std::vector<std::string> args = c;
      args.push_back(bad);
      RunResult r = Tocsin(args);
      std::string what = c.back() + " " + bad;
      EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
      EXPECT_NE(r.err.find(c.back()), std::string::npos) << what << ": " << r.err;
      EXPECT_LT(r.err.size(), 600u) << what << ": " << r.err;
      EXPECT_EQ(r.err.find("1.79769"), std::string::npos) << what << ": " << r.err;
    }
  }
  RunResult counts = Tocsin({"nccl", "--threads", "100000"});
  EXPECT_EQ(counts.exit_code, 2);
  EXPECT_NE(counts.err.find("from 1 to 1024"), std::string::npos) << counts.err;
  for (const std::string flag : {"--settle", "--resync", "--clear-after", "--retry-period"}) {
    RunResult d = Tocsin({"controller", flag, "0.1ms"});
    EXPECT_EQ(d.exit_code, 2) << flag << ": " << d.err;
    EXPECT_NE(d.err.find(flag), std::string::npos) << d.err;
  }
}

TEST(CliUsageTest, BadFlagsExitTwoAndNameTheFlag) {
  RunResult none = Tocsin({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("A subcommand is required"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("--help"), std::string::npos) << none.err;
  RunResult unknown = Tocsin({"node", "--frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--frobnicate"), std::string::npos);
  RunResult format = Tocsin({"node", "-o", "xml"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("xml"), std::string::npos);
  RunResult rate = Tocsin({"node", "--expect-rate", "fast"});
  EXPECT_EQ(rate.exit_code, 2);
  EXPECT_NE(rate.err.find("--expect-rate"), std::string::npos);
  RunResult ll = Tocsin({"node", "--root", kHealthy, "--expect-link-layer", "RoCE"});
  EXPECT_EQ(ll.exit_code, 2);
  EXPECT_NE(ll.err.find("--expect-link-layer"), std::string::npos);
  RunResult mount = Tocsin({"node", "--root", kHealthy, "--expect-mount", "relative/path"});
  EXPECT_EQ(mount.exit_code, 2);
  EXPECT_NE(mount.err.find("--expect-mount"), std::string::npos);
  RunResult root = Tocsin({"node", "--root", "/does/not/exist"});
  EXPECT_EQ(root.exit_code, 2);
  EXPECT_NE(root.err.find("/does/not/exist"), std::string::npos);
}

// Issue 13: a directory given as --profile or --config was read as an empty file, and errors
// named no cause. Each user-given path that cannot be used is exit 2 with the path and the
// errno's meaning (or what the path is instead).
TEST(CliUsageTest, UnusablePathsExitTwoWithTheirCause) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::string file = std::string(TOCSIN_SOURCE_DIR) + "/README.md";
  for (const Case& c : std::vector<Case>{
           {{"node", "--root", kHealthy, "--profile", "/tmp"},
            "--profile /tmp: not a regular file (a directory)"},
           {{"agent", "--config", "/tmp"}, "/tmp: not a regular file (a directory)"},
           {{"node", "--root", "/nope"}, "--root /nope: No such file or directory"},
           {{"node", "--root", file},
            "--root " + file + ": not a directory (a regular file)"},
           {{"nccl", "/nope.log"}, "/nope.log: No such file or directory"},
           {{"audit", "--from", "/tmp"}, "--from /tmp: not a regular file (a directory)"},
       }) {
    RunResult r = Tocsin(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << "wanted: " << c.says << "\ngot: " << r.err;
  }
}

TEST(CliUsageTest, BadProfileExitsTwoNamingKeyAndFile) {
  std::string path = TempFile("expect-gpus: 8\nexpect-rdma-port: 4\n");
  RunResult r = Tocsin({"node", "--root", kHealthy, "--profile", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path), std::string::npos);
  EXPECT_NE(r.err.find("expect-rdma-port"), std::string::npos);
  ::unlink(path.c_str());
  RunResult missing = Tocsin({"node", "--root", kHealthy, "--profile", "/nope.yaml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nope.yaml"), std::string::npos);
}

// The profile applies, and a flag wins over its key: the 8-GPU, 400 Gb/s node against a profile
// that wants 16 GPUs and 800 Gb/s, with --expect-gpus 8 given.
TEST(CliUsageTest, FlagsOverrideTheProfile) {
  std::string path = TempFile("expect-gpus: 16\nexpect-rate: 800\n");
  testing::JsonRun r = testing::RunTocsinJson(
      {"node", "--root", kHealthy, "--profile", path, "--expect-gpus", "8", "-o", "json"});
  EXPECT_EQ(r.exit_code, 1) << r.report.dump(2);
  EXPECT_TRUE(testing::FindingsOf(r.report, "gpu.count").empty()) << "the flag did not win";
  auto rate = testing::FindingsOf(r.report, "rdma.port.rate");
  ASSERT_FALSE(rate.empty()) << "the profile's expect-rate was not applied";
  for (const auto& f : rate) EXPECT_EQ(f["evidence"]["expected_min_gbps"], 800) << f.dump();
  // And with both overridden, the node meets them.
  r = testing::RunTocsinJson({"node", "--root", kHealthy, "--profile", path, "--expect-gpus", "8",
                              "--expect-rate", "400", "-o", "json"});
  ::unlink(path.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(2);
  EXPECT_TRUE(testing::FindingsOf(r.report, "rdma.port.rate").empty());
}

TEST(CliUsageTest, TableOutputIsTheDefault) {
  RunResult r = Tocsin({"node", "--root", kHealthy});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("RDMA PORTS"), std::string::npos);
  EXPECT_NE(r.out.find("mlx5_3/1"), std::string::npos);
  EXPECT_NE(r.out.find("LUSTRE IMPORTS"), std::string::npos);
}

json NodeWithNvml(std::vector<std::string> env, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"node", "--root",         kHealthy, "-o",
                                   "json", "--nvml-library", FAKE_NVML};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = Tocsin(args, env);
  return json::parse(r.out, nullptr, false);
}

TEST(NvmlTest, ModelsAndUuidsFromNvml) {
  json j = NodeWithNvml({});
  ASSERT_FALSE(j.is_discarded());
  const json& gpus = j["inventory"]["gpus"];
  EXPECT_EQ(gpus["nvml"]["status"], "ok");
  EXPECT_EQ(gpus["nvml"]["driver_version"], "550.54.15");
  EXPECT_EQ(gpus["nvml"]["device_count"], 8);
  EXPECT_EQ(gpus["devices"][0]["model"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus["devices"][0]["uuid"], "GPU-fake-0000:03:00.0");
  for (const auto& f : j["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump();
}

TEST(NvmlTest, GpuOnTheBusButNotInNvmlIsAnError) {
  json j = NodeWithNvml({"FAKE_NVML_MISSING=0000:c4:00.0"});
  ASSERT_FALSE(j.is_discarded());
  bool found = false;
  for (const auto& f : j["findings"]) {
    if (f["check"] == "gpu.count" && f["severity"] == "error") {
      found = true;
      EXPECT_EQ(f["evidence"]["nvml_device_count"], 7);
      EXPECT_EQ(f["evidence"]["not_found_by_nvml"][0]["pci_address"], "0000:c4:00.0");
    }
  }
  EXPECT_TRUE(found) << j["findings"].dump(2);
}

TEST(NvmlTest, HungNvmlIsReportedWithinTheTimeout) {
  json j = NodeWithNvml({"FAKE_NVML_HANG=1"}, {"--nvml-timeout", "0.5"});
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["inventory"]["gpus"]["nvml"]["status"], "timeout");
  bool warned = false;
  for (const auto& f : j["findings"]) warned |= f["check"] == "gpu.nvml";
  EXPECT_TRUE(warned);
  EXPECT_EQ(j["inventory"]["gpus"]["count"], 8);  // the PCI inventory is still there
}

TEST(NvmlTest, InitFailureAndMissingLibrary) {
  json err = NodeWithNvml({"FAKE_NVML_INIT_ERROR=1"});
  EXPECT_EQ(err["inventory"]["gpus"]["nvml"]["status"], "error");
  EXPECT_NE(err["inventory"]["gpus"]["nvml"]["detail"].get<std::string>().find("Driver Not Loaded"),
            std::string::npos);
  RunResult absent = Tocsin({"node", "--root", kHealthy, "-o", "json", "--nvml-library",
                             "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(absent.exit_code, 0);
  json j = json::parse(absent.out);
  EXPECT_EQ(j["inventory"]["gpus"]["nvml"]["status"], "absent");
}

}  // namespace
}  // namespace tocsin
