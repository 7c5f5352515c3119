// `tocsin nccl` on the fixture logs in src/nccl/testdata, asserted on the JSON report.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "run_binary.h"
#include "testing/skip.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace tocsin {
namespace {

using nlohmann::json;
using testing::FindingsOf;
using testing::JsonRun;
using testing::RunBinary;
using testing::RunResult;
using testing::RunTocsinJson;

const std::string kLogs = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata/";

JsonRun Nccl(std::vector<std::string> files, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"nccl", "-o", "json"};
  for (const auto& f : files) args.push_back(f == "-" ? f : kLogs + f);
  args.insert(args.end(), extra.begin(), extra.end());
  return RunTocsinJson(args);
}

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
  RunResult in =
      RunBinary(TOCSIN_BINARY, {"nccl", "-o", "json", "-"}, {}, kLogs + "mixed-2.30-kubectl.log");
  json j = json::parse(in.out);
  EXPECT_EQ(j["inventory"]["inputs"][0]["name"], "-");
  EXPECT_EQ(FindingsOf(j, "nccl.transport.socket").size(), 2u);
}

// A large file is read in parallel chunks (here 8 to 12, taken by 2 or 3 threads in whatever
// order the threads get to them, merged in file order); the result must equal reading it in order.
TEST(NcclCliTest, ParallelReadEqualsSequential) {
  std::string parts[2];
  for (int i = 0; i < 2; ++i) {
    std::ifstream in(kLogs + (i == 0 ? "mixed-2.30-kubectl.log" : "nccl-tests-new.log"));
    std::stringstream s;
    s << in.rdbuf();
    parts[i] = s.str();
  }
  char path[] = "/tmp/tocsin-big-log-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path);
    size_t written = 0;
    for (int round = 0; written < (33u << 20); ++round) {
      const std::string& p = parts[round % 7 == 3 ? 1 : 0];  // nccl-tests output now and then
      out << p;
      written += p.size();
    }
  }
  auto run = [&](const char* threads) {
    RunResult r = RunBinary(TOCSIN_BINARY, {"nccl", "-o", "json", "--threads", threads, path});
    json j = json::parse(r.out);
    return std::make_pair(j["inventory"], j["findings"]);
  };
  auto one = run("1");
  auto two = run("2");
  auto three = run("3");
  ::unlink(path);
  EXPECT_EQ(one.first, two.first);
  EXPECT_EQ(one.second, two.second);
  EXPECT_EQ(one.first, three.first);
  EXPECT_EQ(one.second, three.second);
  EXPECT_GT(one.first["nccl_tests"].size(), 1u);
  EXPECT_EQ(FindingsOf(json{{"findings", two.second}}, "nccl.transport.socket").size(), 2u);
}

// A reader thread that cannot be started (a limit on processes, or on memory) aborted the whole
// run once one had started ("terminate called without an active exception"), and failed it with
// an internal error when none had: the threads started read it all, and with none the file is
// read in order. Run as a user of its own under RLIMIT_NPROC (root is exempt from it): 1 lets no
// thread start, 2 lets one start and the next fail.
TEST(NcclCliTest, ThreadsThatCannotStartLeaveTheReadToTheOthers) {
  if (::geteuid() != 0) {
    TOCSIN_SKIP() << "needs root: the run is made as another user under a process limit";
  }
  std::ifstream in(kLogs + "mixed-2.30-kubectl.log");
  std::stringstream s;
  s << in.rdbuf();
  testing::ScopedTempDir dir("nproc");
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // that user reads the log in it
  std::string path = dir.Path("big.log");
  {
    std::ofstream out(path);
    for (size_t written = 0; written < (33u << 20); written += s.str().size()) out << s.str();
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  // A user no process has, picked at random (RLIMIT_NPROC counts every process of the user:
  // nobody may have some, and then not even the exec would pass).
  std::string uid = std::to_string(1'000'000'000 + std::random_device{}() % 1'000'000'000);
  auto as_user = [&](const std::string& nproc, std::vector<std::string> cmd) {
    std::vector<std::string> args = {"--nproc=" + nproc + ":" + nproc,
                                     "--",
                                     "/usr/bin/setpriv",
                                     "--reuid=" + uid,
                                     "--regid=" + uid,
                                     "--clear-groups"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    // LeakSanitizer's exit check starts a thread of its own, which the limit refuses too.
    return RunBinary("/usr/bin/prlimit", args, {"ASAN_OPTIONS=detect_leaks=0"});
  };
  // That user can run tocsin here (a build tree under a folder closed to others, or a user
  // namespace that maps few uids, would not let it), and the limit holds: a shell cannot fork.
  RunResult can = as_user("64", {TOCSIN_BINARY, "--version"});
  if (can.exit_code != 0) {
    TOCSIN_SKIP() << "uid " << uid << " cannot run " << TOCSIN_BINARY << ": " << can.err;
  }
  RunResult probe = as_user("1", {"/bin/sh", "-c", "/bin/true & wait"});
  ASSERT_NE(probe.err.find("fork"), std::string::npos)
      << "RLIMIT_NPROC=1 did not stop a fork: " << probe.exit_code << " " << probe.err;
  RunResult in_order = RunBinary(TOCSIN_BINARY, {"nccl", "-o", "json", "--threads", "1", path});
  ASSERT_EQ(in_order.exit_code, 1) << in_order.err;  // socket findings in the fixture
  json want = json::parse(in_order.out);
  for (const char* nproc : {"1", "2"}) {
    RunResult r = as_user(nproc, {TOCSIN_BINARY, "nccl", "-o", "json", "--threads", "4", path});
    EXPECT_EQ(r.exit_code, 1) << "RLIMIT_NPROC=" << nproc;
    EXPECT_EQ(r.err, "") << "RLIMIT_NPROC=" << nproc;
    json got = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(got.is_discarded()) << r.out << r.err;
    EXPECT_EQ(got["inventory"], want["inventory"]) << "RLIMIT_NPROC=" << nproc;
    EXPECT_EQ(got["findings"], want["findings"]) << "RLIMIT_NPROC=" << nproc;
  }
}

TEST(NcclCliTest, TruncatedAndBinaryInputDoesNotCrash) {
  JsonRun r = Nccl({"truncated.log"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.report["inventory"]["processes"].size(), 4u);
}

TEST(NcclCliTest, MissingFileIsAUsageError) {
  RunResult r = RunBinary(TOCSIN_BINARY, {"nccl", "/no/such.log"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/no/such.log"), std::string::npos);
  RunResult dir = RunBinary(TOCSIN_BINARY, {"nccl", kLogs});
  EXPECT_EQ(dir.exit_code, 2);
  RunResult bad = RunBinary(TOCSIN_BINARY, {"nccl", "--expect", "ib"});
  EXPECT_EQ(bad.exit_code, 2);
}

// --follow on a pipe: the transport of a rank is printed before the input ends.
TEST(NcclCliTest, FollowReportsBeforeEndOfInput) {
  std::ifstream in(kLogs + "mixed-2.30-kubectl.log");
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, to_child[1]);
  posix_spawn_file_actions_addclose(&actions, from_child[0]);
  std::string bin = TOCSIN_BINARY;
  std::vector<std::string> args_s = {bin, "nccl", "--follow", "-"};
  std::vector<char*> argv;
  for (auto& a : args_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, bin.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  // Everything but the last lines: all Init COMPLETE lines are in the first 95%.
  size_t cut = text.size() * 95 / 100;
  ASSERT_EQ(::write(to_child[1], text.data(), cut), static_cast<ssize_t>(cut));
  std::string got;
  char buf[4096];
  while (got.find("[follow]") == std::string::npos) {
    struct pollfd pfd = {from_child[0], POLLIN, 0};
    ASSERT_EQ(::poll(&pfd, 1, 10000), 1) << "no follow line within 10 s; got: " << got;
    ssize_t n = ::read(from_child[0], buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_NE(got.find("train-worker-0"), std::string::npos);
  EXPECT_EQ(got.find("FINDINGS"), std::string::npos);  // the report waits for the end of input
  ASSERT_EQ(::write(to_child[1], text.data() + cut, text.size() - cut),
            static_cast<ssize_t>(text.size() - cut));
  ::close(to_child[1]);
  while (true) {
    ssize_t n = ::read(from_child[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(from_child[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(got.find("nccl.transport.socket"), std::string::npos);
}

// Issue 13: several jobs' logs given together were merged into one job: an EFA job and a job on
// sockets made "ranks of one communicator use different networks" and "4 other process(es) of
// this job use RDMA". Each job is judged alone, and named.
TEST(NcclCliTest, SeveralJobsAreNotMerged) {
  std::string dir = testing::TempDir("nccl-jobs");
  auto copy = [&](const std::string& from, const std::string& to, const std::string& comm) {
    std::ifstream in(kLogs + from);
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

// Issue 13: `nccl --follow -o json` is JSON Lines to the end: one object per line, the
// report included.
TEST(NcclCliTest, FollowJsonIsJsonLinesToTheEnd) {
  RunResult r = RunBinary(TOCSIN_BINARY, {"nccl", "--follow", "-o", "json", "-"}, {},
                          kLogs + "mixed-2.30-kubectl.log");
  EXPECT_EQ(r.exit_code, 1);
  std::vector<json> objects;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    ASSERT_FALSE(line.empty());
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not one JSON object per line: " << line;
    ASSERT_TRUE(j.is_object()) << line;
    objects.push_back(j);
  }
  ASSERT_GE(objects.size(), 2u);
  EXPECT_TRUE(objects.front().contains("event"));
  EXPECT_EQ(objects.back()["command"], "nccl");  // the report, last
  EXPECT_FALSE(FindingsOf(objects.back(), "nccl.transport.socket").empty());
}

// Issue 13: `tocsin nccl FIFO` blocked in open(). A FIFO is refused at once (exit 2), with the
// way to read a pipe: stdin.
TEST(NcclCliTest, AFifoIsRefusedNotWaitedFor) {
  std::string dir = testing::TempDir("nccl-fifo");
  std::string fifo = dir + "/log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = testing::RunBinaryWithin(60, TOCSIN_BINARY, {"nccl", fifo});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(fifo + ": not a regular file (a FIFO); pipe it to stdin (-)"),
            std::string::npos)
      << r.err;
  ::unlink(fifo.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace tocsin
