// `tocsin nccl` reading its input: large files in parallel chunks (and when threads cannot
// start), stdin and --follow, broken and missing files, FIFOs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "nccl_cli.h"
#include "run_binary.h"
#include "testing/skip.h"
#include "testing/temp_dir.h"

extern char** environ;

namespace tocsin {
namespace {

using nlohmann::json;
using testing::FindingsOf;
using testing::JsonRun;
using testing::kNcclLogs;
using testing::Nccl;
using testing::RunBinary;
using testing::RunResult;

// A large file is read in parallel chunks (here 8 to 12, taken by 2 or 3 threads in whatever
// order the threads get to them, merged in file order); the result must equal reading it in order.
TEST(NcclCliTest, ParallelReadEqualsSequential) {
  std::string parts[2];
  for (int i = 0; i < 2; ++i) {
    std::ifstream in(kNcclLogs + (i == 0 ? "mixed-2.30-kubectl.log" : "nccl-tests-new.log"));
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
  std::ifstream in(kNcclLogs + "mixed-2.30-kubectl.log");
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
  RunResult dir = RunBinary(TOCSIN_BINARY, {"nccl", kNcclLogs});
  EXPECT_EQ(dir.exit_code, 2);
  RunResult bad = RunBinary(TOCSIN_BINARY, {"nccl", "--expect", "ib"});
  EXPECT_EQ(bad.exit_code, 2);
}

// --follow on a pipe: the transport of a rank is printed before the input ends.
TEST(NcclCliTest, FollowReportsBeforeEndOfInput) {
  std::ifstream in(kNcclLogs + "mixed-2.30-kubectl.log");
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

// Issue 13: `nccl --follow -o json` is JSON Lines to the end: one object per line, the
// report included.
TEST(NcclCliTest, FollowJsonIsJsonLinesToTheEnd) {
  RunResult r = RunBinary(TOCSIN_BINARY, {"nccl", "--follow", "-o", "json", "-"}, {},
                          kNcclLogs + "mixed-2.30-kubectl.log");
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
