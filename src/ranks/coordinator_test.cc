// Admission and rounds against hostile connections: idle ones, oversized ones, wrong tokens,
// floods of junk, and a joined rank that sends what the protocol does not allow.
#include "ranks/coordinator.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <fstream>
#include <future>
#include <nlohmann/json.hpp>

#include "ranks/world_testing.h"
#include "testing/status_matchers.h"
#include "tocsin/version.h"

namespace tocsin::ranks {
namespace {

using namespace std::chrono_literals;
using testing::Dial;
using testing::Job;
using testing::MustConnect;
using testing::Options;

// Rank 1 joins; both joins must succeed.
void ExpectRankOneJoins(Job& job) {
  job.worlds.push_back(MustConnect(Options(1, 2, job.coordinator)));
  auto j1 = std::async(std::launch::async, [&] { return job.worlds[1]->Join("a1"); });
  auto j0 = job.worlds[0]->Join("a0");
  EXPECT_OK(j0);
  auto r1 = j1.get();
  EXPECT_OK(r1);
}

TEST(CoordinatorTest, IdleOneByteConnectionsDoNotKeepARankOut) {
  // The coordinator once read joining connections one at a time, 5 s each: twelve of these
  // kept rank 1 out of a 10 s rendezvous.
  Job job(2, 10s);
  std::vector<Fd> idle;
  for (int i = 0; i < 12; ++i) {
    idle.push_back(Dial(job.coordinator));
    ASSERT_EQ(send(idle.back().get(), "x", 1, MSG_NOSIGNAL), 1);
  }
  auto start = SteadyClock::now();
  ExpectRankOneJoins(job);
  EXPECT_LT(SteadyClock::now() - start, 5s);
}

TEST(CoordinatorTest, WaitingConnectionsAreCappedAndTheOldestGiveWay) {
  Job job(2, 1s);
  std::vector<Fd> idle;
  for (size_t i = 0; i < Coordinator::kMaxPending + 36; ++i) {
    idle.push_back(Dial(job.coordinator));
    ASSERT_EQ(send(idle.back().get(), "x", 1, MSG_NOSIGNAL), 1);
  }
  // The first of them were closed to make room: an event, waited for with a bound.
  auto first = ReadFrame(idle.front().get(), DeadlineIn(5s), "test");
  EXPECT_EQ(first.status().code(), StatusCode::kIoError) << first.status().ToString();
  auto j0 = job.worlds[0]->Join("a0");  // rank 1 never comes
  ASSERT_FALSE(j0.ok());
  EXPECT_NE(j0.status().message().find("36 waiting connection(s) were dropped to make room"),
            std::string::npos)
      << j0.status().ToString();
}

// Kilobytes of this process's resident memory: "VmRSS" now, "VmHWM" its peak.
int64_t MemoryKb(const char* which) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(which)) return std::stoll(line.substr(line.find(':') + 1));
  }
  return -1;
}

TEST(CoordinatorTest, AHugePreAuthFrameIsRefusedAtOnceWithoutMemoryGrowth) {
  Job job(2);
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak starts over from here
  int64_t before = MemoryKb("VmRSS");
  for (int i = 0; i < 8; ++i) {
    Fd fd = Dial(job.coordinator);
    uint32_t n = 30 << 20;  // a 30 MB "hello": the coordinator allocated it and waited for it
    unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                               static_cast<unsigned char>(n >> 16),
                               static_cast<unsigned char>(n >> 24)};
    ASSERT_TRUE(WriteAll(fd.get(), header, 4, DeadlineIn(2s), "test").ok());
    ASSERT_TRUE(WriteAll(fd.get(), std::string(1000, '{').data(), 1000, DeadlineIn(2s), "t").ok());
    auto answer = ReadFrame(fd.get(), DeadlineIn(2s), "test");
    ASSERT_OK(answer);
    EXPECT_NE(answer->find("refused: not a tocsin rank"), std::string::npos) << *answer;
  }
  EXPECT_LT(MemoryKb("VmHWM") - before, 16 << 10) << "peak grew by more than 16 MiB";
  ExpectRankOneJoins(job);
}

TEST(CoordinatorTest, OutOfDescriptorsBacksOffAndSaysSo) {
  Job job(2, 1s);
  {  // the coordinator's thread runs (a refusal came back) before descriptors run out
    Fd probe = Dial(job.coordinator);
    ASSERT_TRUE(WriteFrame(probe.get(), "junk", DeadlineIn(2s), "test").ok());
    ASSERT_TRUE(ReadFrame(probe.get(), DeadlineIn(2s), "test").ok());
  }
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  // Every descriptor taken but one, which the connection below uses: rank 0 cannot accept it.
  rlimit low = old;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<Fd> filler;
  while (true) {
    Fd f(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!f.valid()) break;
    filler.push_back(std::move(f));
  }
  ASSERT_FALSE(filler.empty());
  filler.pop_back();
  Fd waiting = Dial(job.coordinator);
  rusage start{};
  getrusage(RUSAGE_SELF, &start);
  auto j0 = job.worlds[0]->Join("a0");  // until the 1 s rendezvous ends
  rusage end{};
  getrusage(RUSAGE_SELF, &end);
  filler.clear();
  setrlimit(RLIMIT_NOFILE, &old);
  ASSERT_FALSE(j0.ok());
  EXPECT_NE(j0.status().message().find("Too many open files"), std::string::npos)
      << j0.status().ToString();
  auto cpu = [](const rusage& u) {
    return u.ru_utime.tv_sec * 1e3 + u.ru_utime.tv_usec / 1e3 + u.ru_stime.tv_sec * 1e3 +
           u.ru_stime.tv_usec / 1e3;
  };
  EXPECT_LT(cpu(end) - cpu(start), 300) << "ms of CPU in a 1 s wait: the accept loop spins";
}

TEST(CoordinatorTest, SilentConnectionsAreDroppedAndCounted) {
  Job job(2, 1500ms, 100ms);
  Fd silent = Dial(job.coordinator);
  // Dropped: the coordinator closes it (an event, waited for with a bound).
  auto read = ReadFrame(silent.get(), DeadlineIn(5s), "test");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kIoError) << read.status().ToString();
  auto j0 = job.worlds[0]->Join("a0");  // rank 1 never comes
  ASSERT_FALSE(j0.ok());
  EXPECT_NE(j0.status().message().find("rank(s) 1 did not join"), std::string::npos);
  EXPECT_NE(j0.status().message().find("1 connection(s) sent no hello within 0.1 s"),
            std::string::npos)
      << j0.status().ToString();
}

TEST(CoordinatorTest, NothingIsRevealedBeforeTheTokenMatches) {
  Job job(2, 2s);
  Hello h{"0.0.0-other", "wrong", 1, 3, "other params", "evil", ""};
  Fd fd = Dial(job.coordinator);
  ASSERT_TRUE(WriteFrame(fd.get(), EncodeHello(h), DeadlineIn(2s), "test").ok());
  auto answer = ReadFrame(fd.get(), DeadlineIn(2s), "test");
  ASSERT_OK(answer);
  EXPECT_NE(answer->find("not authenticated"), std::string::npos) << *answer;
  for (const std::string& secret : {std::string(kVersion), std::string("allreduce"),
                                    std::string("world size"), std::string("\"t\"")}) {
    EXPECT_EQ(answer->find(secret), std::string::npos) << *answer;
  }
  // With the right token the same mismatch is explained.
  h.token = "t";
  Fd fd2 = Dial(job.coordinator);
  ASSERT_TRUE(WriteFrame(fd2.get(), EncodeHello(h), DeadlineIn(2s), "test").ok());
  auto explained = ReadFrame(fd2.get(), DeadlineIn(2s), "test");
  ASSERT_TRUE(explained.ok());
  EXPECT_NE(explained->find(kVersion), std::string::npos) << *explained;
}

TEST(CoordinatorTest, RefusalsAreCutAndCounted) {
  Job job(2, 2s);
  for (int i = 0; i < 20; ++i) {
    Fd fd = Dial(job.coordinator);
    Hello h{std::string(60, 'v'), "t", 1, 2, std::string(3000, 'p'), std::string(250, 'h'), ""};
    ASSERT_TRUE(WriteFrame(fd.get(), EncodeHello(h), DeadlineIn(2s), "test").ok());
    ASSERT_TRUE(ReadFrame(fd.get(), DeadlineIn(2s), "test").ok());
  }
  auto j0 = job.worlds[0]->Join("a0");
  ASSERT_FALSE(j0.ok());
  const std::string& m = j0.status().message();
  EXPECT_NE(m.find("; 12 more refused"), std::string::npos) << m.substr(0, 300);
  EXPECT_LT(m.size(), 8 * 800u) << "each reason is cut";
}

// Joins as rank 1 by hand; returns the control connection, roster read.
Fd JoinByHand(Job& job) {
  Fd fd = Dial(job.coordinator);
  WorldOptions o = Options(1, 2, job.coordinator);
  Hello h{kVersion, o.token, 1, 2, o.params, "hand", ""};
  EXPECT_TRUE(WriteFrame(fd.get(), EncodeHello(h), DeadlineIn(5s), "test").ok());
  EXPECT_TRUE(
      WriteFrame(fd.get(), R"({"type":"address","address":"x:1"})", DeadlineIn(5s), "test").ok());
  return fd;
}

TEST(CoordinatorTest, AMalformedMessageBlamesItsRankAndNeverCrashesRankZero) {
  for (const char* bad :
       {R"({"type":"stall","peer":99,"detail":"x"})", R"({"type":"gather","payload":7})",
        R"({"type":"gather"})", "not json", "", R"({"type":17})", "[]"}) {
    SCOPED_TRACE(bad);
    Job job(2, 5s);
    auto j0 = std::async(std::launch::async, [&] { return job.worlds[0]->Join("a0"); });
    Fd fd = JoinByHand(job);
    ASSERT_TRUE(j0.get().ok());
    ASSERT_TRUE(ReadFrame(fd.get(), DeadlineIn(5s), "test").ok());  // the roster
    ASSERT_TRUE(WriteFrame(fd.get(), bad, DeadlineIn(5s), "test").ok());
    auto g0 = job.worlds[0]->AllGather("x");
    ASSERT_FALSE(g0.ok());
    EXPECT_NE(g0.status().message().find("rank 1 (hand 127.0.0.1) sent a malformed message"),
              std::string::npos)
        << g0.status().ToString();
    EXPECT_EQ(job.worlds[0]->aborted_by(), "rank 1 (hand 127.0.0.1)");
  }
}

TEST(CoordinatorTest, TheRosterCarriesAPerRunSecret) {
  Job job(2);
  job.worlds.push_back(MustConnect(Options(1, 2, job.coordinator)));
  auto j1 = std::async(std::launch::async, [&] { return job.worlds[1]->Join("a1").ok(); });
  ASSERT_TRUE(job.worlds[0]->Join("a0").ok());
  ASSERT_TRUE(j1.get());
  EXPECT_EQ(job.worlds[0]->run_secret().size(), kRunSecretBytes);
  EXPECT_EQ(job.worlds[0]->run_secret(), job.worlds[1]->run_secret());
  EXPECT_NE(job.worlds[0]->run_secret(), "t");
  Job other(1);
  ASSERT_TRUE(other.worlds[0]->Join("a").ok());
  EXPECT_NE(other.worlds[0]->run_secret(), job.worlds[0]->run_secret());
}

TEST(CoordinatorTest, RankZeroListensOnTheCoordinatorAddressOnly) {
  // 127.0.0.2 is this host but not 127.0.0.1: a listener on every interface answers both.
  auto w0 = World::Connect(Options(0, 2, "127.0.0.2:0", 1s));
  ASSERT_OK(w0);
  auto hp = SplitHostPort((*w0)->options().coordinator);
  ASSERT_TRUE(hp.ok());
  auto other = ConnectRetry("127.0.0.1", hp->second, DeadlineIn(100ms));
  EXPECT_FALSE(other.ok()) << "rank 0 answered on 127.0.0.1";
  auto bad = World::Connect(Options(0, 2, "192.0.2.1:0", 1s));  // TEST-NET-1: not this host
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must name an address of this host"), std::string::npos)
      << bad.status().ToString();
}

TEST(CoordinatorTest, AMultiRankRunNeedsAToken) {
  WorldOptions o = Options(1, 2, "127.0.0.1:1");
  o.token = "";
  Status st = Validate(o);
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("TOCSIN_BENCH_TOKEN"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("--token-file"), std::string::npos);
  EXPECT_NE(st.message().find("--insecure-no-token"), std::string::npos);
  o.insecure_no_token = true;
  EXPECT_TRUE(Validate(o).ok());
  WorldOptions single = Options(0, 1, "");
  single.token = "";
  EXPECT_TRUE(Validate(single).ok());
}

}  // namespace
}  // namespace tocsin::ranks
