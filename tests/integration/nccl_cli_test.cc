// `tocsin nccl` on the fixture logs in src/nccl/testdata, asserted on the JSON report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "nccl_cli.h"
#include "run_binary.h"

namespace tocsin {
namespace {

using nlohmann::json;
using testing::FindingsOf;
using testing::JsonRun;
using testing::kNcclLogs;
using testing::Nccl;
using testing::RunBinary;
using testing::RunResult;
using testing::RunTocsinJson;

TEST(NcclCliTest, HealthyJobsAcrossVersionsAndFabricsAreClean) {
  for (const char* log : {"ib-2.12.log", "ib-2.18.log", "roce-2.21-mpirun.log", "efa-2.27.log",
                          "nccl-tests-new.log"}) {
    JsonRun r = Nccl({log}, {"--expect", "rdma", "--expect-gdr", "--fail-on", "warning"});
    EXPECT_EQ(r.exit_code, 0) << log << r.report["findings"].dump(2);
    EXPECT_TRUE(r.report["findings"].empty()) << log;
    const json& procs = r.report["inventory"]["processes"];
    ASSERT_EQ(procs.size(), 4u) << log;
    for (const auto& p : procs) {
      EXPECT_TRUE(p["gdr"].get<bool>()) << log;
      ASSERT_EQ(p["ranks"].size(), 1u) << log;
    }
  }
}

TEST(NcclCliTest, WhichTransportEachRankUsed) {
  JsonRun ib = Nccl({"ib-2.18.log"});
  const json& p0 = ib.report["inventory"]["processes"][0];
  EXPECT_EQ(p0["host"], "node-a");
  EXPECT_EQ(p0["ranks"][0]["rank"], 0);
  EXPECT_EQ(p0["ranks"][0]["nranks"], 4);
  EXPECT_EQ(p0["nccl_version"], "2.18.3");
  EXPECT_EQ(p0["network"], "IB");
  EXPECT_EQ(p0["inter_node_transport"], "IB");
  EXPECT_EQ(p0["nics"], json::array({"mlx5_0:1/IB", "mlx5_1:1/IB"}));
  EXPECT_EQ(ib.report["inventory"]["summary"]["transports"]["IB"], 4);

  JsonRun roce = Nccl({"roce-2.21-mpirun.log"});
  EXPECT_EQ(roce.report["inventory"]["processes"][3]["host"], "roce-b");  // mpirun prefix cut
  EXPECT_EQ(roce.report["inventory"]["processes"][3]["nics"][0], "mlx5_0:1/RoCE");

  JsonRun efa = Nccl({"efa-2.27.log"});
  EXPECT_EQ(efa.report["inventory"]["processes"][0]["ofi_provider"], "efa");
  EXPECT_EQ(efa.report["inventory"]["summary"]["transports"]["Libfabric"], 4);
}

TEST(NcclCliTest, OneHostFellBackToSockets) {
  JsonRun r = Nccl({"mixed-2.30-kubectl.log"});
  EXPECT_EQ(r.exit_code, 1);
  auto sock = FindingsOf(r.report, "nccl.transport.socket");
  ASSERT_EQ(sock.size(), 2u);
  std::set<std::string> subjects = {sock[0]["subject"], sock[1]["subject"]};
  EXPECT_EQ(subjects, (std::set<std::string>{"train-worker-1/2", "train-worker-1/3"}));
  EXPECT_TRUE(sock[0]["evidence"]["ib_no_device"].get<bool>());
  EXPECT_NE(sock[0]["message"].get<std::string>().find("No device found"), std::string::npos);
  auto mixed = FindingsOf(r.report, "nccl.transport.mixed");
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(mixed[0]["subject"], "comm 0xadcb40d61cc1bc4b");
}

TEST(NcclCliTest, AllSocketIsFineUnlessRdmaIsExpected) {
  EXPECT_EQ(Nccl({"socket-2.12.log"}).exit_code, 0);
  JsonRun r = Nccl({"socket-2.12.log"}, {"--expect", "rdma"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(FindingsOf(r.report, "nccl.transport.socket").size(), 4u);
  EXPECT_TRUE(FindingsOf(r.report, "nccl.transport.mixed").empty());
}

// A two-host log that ends before NCCL set up its network channels: with --expect rdma that is
// "cannot tell" (a warning), never ok; without an expectation there is nothing to judge.
TEST(NcclCliTest, ExpectRdmaOnALogThatNeverShowsTheTransportCannotTell) {
  JsonRun r = Nccl({"no-network-2.18.log"}, {"--expect", "rdma"});
  EXPECT_EQ(r.exit_code, 0);  // a warning: below the default --fail-on error
  auto unknown = FindingsOf(r.report, "nccl.transport.unknown");
  ASSERT_EQ(unknown.size(), 1u) << r.report.dump(1);
  EXPECT_EQ(unknown[0]["severity"], "warning");
  EXPECT_EQ(unknown[0]["evidence"]["result"], "unknown");
  EXPECT_EQ(unknown[0]["evidence"]["hosts"].size(), 2u);
  EXPECT_NE(r.report["status"].get<std::string>(), "ok");
  EXPECT_TRUE(FindingsOf(Nccl({"no-network-2.18.log"}).report, "nccl.transport.unknown").empty());
  // A log whose transport is known says nothing of the kind.
  EXPECT_TRUE(
      FindingsOf(Nccl({"ib-2.18.log"}, {"--expect", "rdma"}).report, "nccl.transport.unknown")
          .empty());
}

TEST(NcclCliTest, RiskySettingsAndGdr) {
  JsonRun r = Nccl({"ib-disable-2.27.log"}, {"--expect", "rdma"});
  auto risky = FindingsOf(r.report, "nccl.env.risky");
  ASSERT_EQ(risky.size(), 4u);
  EXPECT_EQ(risky[0]["evidence"]["name"], "NCCL_IB_DISABLE");
  auto sock = FindingsOf(r.report, "nccl.transport.socket");
  ASSERT_EQ(sock.size(), 4u);
  EXPECT_NE(sock[0]["message"].get<std::string>().find("NCCL_IB_DISABLE=1"), std::string::npos);
  EXPECT_EQ(r.report["inventory"]["processes"][0]["plugin_failures"], json::array({"IB"}));

  EXPECT_TRUE(FindingsOf(Nccl({"ib-nogdr-2.21.log"}).report, "nccl.gdr.absent").empty());
  EXPECT_EQ(
      FindingsOf(Nccl({"ib-nogdr-2.21.log"}, {"--expect-gdr"}).report, "nccl.gdr.absent").size(),
      4u);
}

TEST(NcclCliTest, InitFailureAndNoDebug) {
  JsonRun failed = Nccl({"init-failed-2.27.log"});
  EXPECT_EQ(failed.exit_code, 1);
  auto init = FindingsOf(failed.report, "nccl.init.failed");
  ASSERT_EQ(init.size(), 4u);
  EXPECT_EQ(init[0]["subject"], "node-a/pid 4000");
  EXPECT_EQ(failed.report["inventory"]["processes"][0]["inter_node_transport"], "unknown");

  JsonRun quiet = Nccl({"no-debug.log"});
  EXPECT_EQ(quiet.exit_code, 0);
  auto nd = FindingsOf(quiet.report, "nccl.log.no-debug");
  ASSERT_EQ(nd.size(), 1u);
  EXPECT_NE(nd[0]["message"].get<std::string>().find("NCCL_DEBUG=INFO"), std::string::npos);
  EXPECT_EQ(Nccl({"no-debug.log"}, {"--fail-on", "warning"}).exit_code, 1);
}

// Issue 14, real inputs 1: WARN lines NCCL prints during a good init are no errors.
TEST(NcclCliTest, BenignWarnsAreInfoWithTheirText) {
  JsonRun benign = Nccl({"warn-benign-2.12.log"});
  EXPECT_EQ(benign.exit_code, 0) << benign.report["findings"].dump(2);
  EXPECT_TRUE(FindingsOf(benign.report, "nccl.init.failed").empty());
  auto info = FindingsOf(benign.report, "nccl.warn");
  ASSERT_EQ(info.size(), 4u);
  for (const auto& f : info) {
    EXPECT_EQ(f["severity"], "info");
    const json& w = f["evidence"]["warnings"];
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0]["text"], "Failed to open libibverbs.so[.1]");
    EXPECT_EQ(w[1]["kind"], "benign");
  }
  // The fallback they announce is still judged on its own.
  EXPECT_EQ(FindingsOf(Nccl({"warn-benign-2.12.log"}, {"--expect", "rdma"}).report,
                       "nccl.transport.socket")
                .size(),
            4u);

  // A WARN nobody classified, followed by Init COMPLETE: info; one after init that nothing
  // followed: an error.
  JsonRun resolved = Nccl({"warn-resolved-2.18.log"});
  auto failed = FindingsOf(resolved.report, "nccl.init.failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["subject"], "node-b/3");
  EXPECT_NE(failed[0]["message"].get<std::string>().find("Got completion"), std::string::npos);
  auto fifo = FindingsOf(resolved.report, "nccl.warn");
  ASSERT_EQ(fifo.size(), 1u);
  EXPECT_EQ(fifo[0]["subject"], "node-a/0");

  // NCCL_DEBUG=WARN: no Init COMPLETE can follow, so only what NCCL's source says counts.
  JsonRun quiet = Nccl({"warn-only-2.29.log"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.report["findings"].dump(2);
  EXPECT_EQ(FindingsOf(quiet.report, "nccl.warn").size(), 4u);
  EXPECT_EQ(FindingsOf(quiet.report, "nccl.log.no-debug").size(), 1u);
  EXPECT_EQ(quiet.report["inventory"]["summary"]["nccl_versions"], json::array({"2.29.7"}));
}

// Issue 14, real inputs 4: the bare "NCCL version" line is rank 0's.
TEST(NcclCliTest, BareVersionLineIsRankZeros) {
  JsonRun r = Nccl({"bare-version-2.8.log"});
  const json& procs = r.report["inventory"]["processes"];
  ASSERT_EQ(procs.size(), 4u);
  for (const auto& p : procs) {
    EXPECT_EQ(p["nccl_version"], p["ranks"][0]["rank"] == 0 ? "2.8.4" : "") << p.dump();
  }
}

// Issue 14, real inputs 5: "/SHARP" after the link layer is a flag, not the link layer.
TEST(NcclCliTest, SharpDevicesKeepTheirLinkLayer) {
  JsonRun r = Nccl({"ib-sharp-2.12.log"}, {"--expect", "rdma", "--expect-gdr"});
  EXPECT_EQ(r.exit_code, 0) << r.report["findings"].dump(2);
  const json& p0 = r.report["inventory"]["processes"][0];
  EXPECT_EQ(p0["nics"], json::array({"mlx5_0:1/IB/SHARP", "mlx5_1:1/IB/SHARP"}));
  EXPECT_EQ(p0["inter_node_transport"], "IBext");
}

// Issue 14, real inputs 6: lines without host:pid:tid are attributed as far as they can be, and
// no WARN vanishes.
TEST(NcclCliTest, RedactedAndHeaderlessLines) {
  JsonRun redacted = Nccl({"redacted-pid-2.18.log"});
  const json& procs = redacted.report["inventory"]["processes"];
  ASSERT_EQ(procs.size(), 4u);
  for (const auto& p : procs) {
    EXPECT_TRUE(p["pid"].is_null());
    EXPECT_EQ(p["inter_node_transport"], "IB");
    ASSERT_EQ(p["ranks"].size(), 1u);
  }
  EXPECT_EQ(procs[0]["host"], "node-a");
  EXPECT_EQ(procs[0]["cuda_dev"], 0);
  auto failed = FindingsOf(redacted.report, "nccl.init.failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["subject"], "node-b/3");

  JsonRun bare = Nccl({"no-header-2.12.log"});
  ASSERT_EQ(bare.report["inventory"]["processes"].size(), 2u);
  EXPECT_EQ(bare.report["inventory"]["processes"][0]["network"], "IB");
  EXPECT_EQ(bare.report["inventory"]["processes"][0]["nccl_version"], "2.12.12");
  auto lost = FindingsOf(bare.report, "nccl.init.failed");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_NE(lost[0]["message"].get<std::string>().find("illegal memory access"), std::string::npos);
  EXPECT_EQ(bare.exit_code, 1);
}

// Issue 14, real inputs 2: the old "error" column is the largest difference, not #wrong.
TEST(NcclCliTest, OldErrorColumnPassesAndFails) {
  JsonRun pass = Nccl({"nccl-tests-old-error.log"});
  EXPECT_EQ(pass.exit_code, 0) << pass.report["findings"].dump(2);
  EXPECT_TRUE(FindingsOf(pass.report, "nccl.wrong").empty());
  const json& run = pass.report["inventory"]["nccl_tests"][0];
  EXPECT_EQ(run["devices"].size(), 128u);
  EXPECT_EQ(run["rows"].size(), 6u);
  EXPECT_DOUBLE_EQ(run["rows"][1]["in_place"]["max_error"].get<double>(), 1e-06);
  EXPECT_TRUE(run["rows"][1]["in_place"]["wrong"].is_null());

  JsonRun fail = Nccl({"nccl-tests-old-failed.log"});
  EXPECT_EQ(fail.exit_code, 1);
  auto w = FindingsOf(fail.report, "nccl.wrong");
  ASSERT_EQ(w.size(), 3u);  // two rows marked '*', and the broadcast run's count
  std::map<std::string, json> by_subject;
  for (const auto& f : w) by_subject[f["subject"]] = f;
  EXPECT_EQ(by_subject["nccl-tests size 16777216"]["evidence"]["in_place_max_error"], 3.0);
  EXPECT_TRUE(by_subject["nccl-tests size 134217728"]["evidence"]["out_of_bounds"].get<bool>());
  EXPECT_EQ(by_subject["nccl-tests"]["evidence"]["largest_error"], 5.0);
  EXPECT_EQ(by_subject["nccl-tests"]["evidence"]["out_of_bounds"], 1);
}

TEST(NcclCliTest, NcclTestsOutput) {
  JsonRun wrong = Nccl({"nccl-tests-wrong.log"});
  EXPECT_EQ(wrong.exit_code, 1);
  auto w = FindingsOf(wrong.report, "nccl.wrong");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0]["evidence"]["size"], 268435456);

  JsonRun old = Nccl({"nccl-tests-old.log"}, {"--min-busbw", "100"});
  const json& run = old.report["inventory"]["nccl_tests"][0];
  EXPECT_EQ(run["rows"].size(), 3u);
  EXPECT_DOUBLE_EQ(run["avg_busbw_gbps"].get<double>(), 61.6217);
  auto low = FindingsOf(old.report, "nccl.busbw.low");
  ASSERT_EQ(low.size(), 1u);
  EXPECT_EQ(old.exit_code, 1);
  EXPECT_TRUE(
      FindingsOf(Nccl({"nccl-tests-old.log"}, {"--min-busbw", "50"}).report, "nccl.busbw.low")
          .empty());

  JsonRun fresh = Nccl({"nccl-tests-new.log"}, {"--min-busbw", "200"});
  EXPECT_EQ(fresh.report["inventory"]["nccl_tests"][0]["test"], "all_reduce_perf");
  EXPECT_EQ(fresh.report["inventory"]["nccl_tests"][0]["devices"].size(), 4u);
  EXPECT_TRUE(FindingsOf(fresh.report, "nccl.busbw.low").empty());
}

TEST(NcclCliTest, SeveralFilesAndStdin) {
  JsonRun two = Nccl({"ib-2.18.log", "mixed-2.30-kubectl.log"});
  EXPECT_EQ(two.report["inventory"]["inputs"].size(), 2u);
  EXPECT_EQ(two.report["inventory"]["processes"].size(), 8u);
  // Two jobs (their commIds match, but each has its own rank 0): never compared. The mixed
  // transports are those of the second file's own communicator.
  EXPECT_EQ(two.report["inventory"]["jobs"].size(), 2u);
  auto mixed = FindingsOf(two.report, "nccl.transport.mixed");
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(mixed[0]["evidence"]["job"], "job 2");
  EXPECT_NE(mixed[0]["message"].get<std::string>().find("2 on IB, 2 on Socket"), std::string::npos);
  RunResult in = RunBinary(TOCSIN_BINARY, {"nccl", "-o", "json", "-"}, {},
                           kNcclLogs + "mixed-2.30-kubectl.log");
  json j = json::parse(in.out);
  EXPECT_EQ(j["inventory"]["inputs"][0]["name"], "-");
  EXPECT_EQ(FindingsOf(j, "nccl.transport.socket").size(), 2u);
}

// Issue 13: several jobs' logs given together were merged into one job: an EFA job and a job on
// sockets made "ranks of one communicator use different networks" and "4 other process(es) of
// this job use RDMA". Each job is judged alone, and named.
TEST(NcclCliTest, SeveralJobsAreNotMerged) {
  std::string dir = testing::TempDir("nccl-jobs");
  auto copy = [&](const std::string& from, const std::string& to, const std::string& comm) {
    std::ifstream in(kNcclLogs + from);
    std::ofstream out(dir + "/" + to);
    std::string line;
    while (std::getline(in, line)) {
      size_t at = line.find("commId 0x");
      if (at != std::string::npos) line.replace(at + 7, 18, comm);
      out << line << "\n";
    }
  };
  copy("efa-2.27.log", "efa.log", "0x1111111111111111");
  copy("ib-disable-2.27.log", "tcp.log", "0x2222222222222222");
  JsonRun r = RunTocsinJson({"nccl", "-o", "json", dir + "/efa.log", dir + "/tcp.log"});
  EXPECT_EQ(r.exit_code, 0) << r.report["findings"].dump(1);
  EXPECT_TRUE(FindingsOf(r.report, "nccl.transport.mixed").empty());
  EXPECT_TRUE(FindingsOf(r.report, "nccl.transport.socket").empty());
  ASSERT_EQ(r.report["inventory"]["jobs"].size(), 2u);
  // One stream with both jobs: the same.
  RunResult cat = RunBinary("/bin/sh", {"-c", "cat " + dir + "/efa.log " + dir + "/tcp.log | " +
                                                  TOCSIN_BINARY + " nccl -o json -"});
  json j = json::parse(cat.out);
  EXPECT_EQ(j["inventory"]["jobs"].size(), 2u);
  EXPECT_TRUE(FindingsOf(j, "nccl.transport.mixed").empty());
  // With --expect rdma, the sockets job is the one named.
  JsonRun rdma =
      RunTocsinJson({"nccl", "-o", "json", "--expect", "rdma", dir + "/efa.log", dir + "/tcp.log"});
  auto socket = FindingsOf(rdma.report, "nccl.transport.socket");
  ASSERT_FALSE(socket.empty());
  for (const auto& f : socket) EXPECT_EQ(f["evidence"]["job"], "job 2") << f.dump();
}

}  // namespace
}  // namespace tocsin
