#include "ranks/world.h"

#include <gtest/gtest.h>

#include <future>

#include "ranks/world_testing.h"
#include "testing/status_matchers.h"

namespace tocsin::ranks {
namespace {

using namespace std::chrono_literals;

using testing::Job;
using testing::MustConnect;
using testing::Options;

TEST(WorldTest, JoinGatherLeave) {
  Job job(3);
  for (int r = 1; r < 3; ++r) {
    auto w = World::Connect(Options(r, 3, job.coordinator));
    ASSERT_OK(w);
    job.worlds.push_back(std::move(*w));
  }
  std::vector<std::future<Result<std::vector<Peer>>>> joins;
  for (int r = 0; r < 3; ++r) {
    joins.push_back(std::async(
        std::launch::async, [&, r] { return job.worlds[r]->Join("addr-" + std::to_string(r)); }));
  }
  for (int r = 0; r < 3; ++r) {
    auto peers = joins[r].get();
    ASSERT_OK(peers);
    ASSERT_EQ(peers->size(), 3u);
    EXPECT_EQ((*peers)[2].address, "addr-2");
    EXPECT_EQ((*peers)[1].ip, "127.0.0.1");
  }
  std::vector<std::future<Result<std::vector<std::string>>>> gathers;
  for (int r = 0; r < 3; ++r) {
    gathers.push_back(std::async(std::launch::async, [&, r] {
      return job.worlds[r]->AllGather("v" + std::to_string(r * 10));
    }));
  }
  for (auto& g : gathers) {
    auto all = g.get();
    ASSERT_OK(all);
    EXPECT_EQ(*all, (std::vector<std::string>{"v0", "v10", "v20"}));
  }
  for (int r = 2; r >= 0; --r) job.worlds[r]->Leave();
}

TEST(WorldTest, WrongTokenIsRefusedAndNamed) {
  Job job(2, 1500ms);
  WorldOptions o = Options(1, 2, job.coordinator, 1500ms);
  o.token = "other";
  auto w1 = World::Connect(o);
  ASSERT_TRUE(w1.ok());
  auto j0 = std::async(std::launch::async, [&] { return job.worlds[0]->Join("a0"); });
  auto j1 = (*w1)->Join("a1");
  ASSERT_FALSE(j1.ok());
  EXPECT_NE(j1.status().message().find("another token"), std::string::npos)
      << j1.status().ToString();
  auto r0 = j0.get();
  ASSERT_FALSE(r0.ok());
  EXPECT_NE(r0.status().message().find("rank(s) 1 did not join"), std::string::npos)
      << r0.status().ToString();
  EXPECT_NE(r0.status().message().find("another token"), std::string::npos);
}

TEST(WorldTest, ARankThatGoesAwayAbortsTheOthers) {
  Job job(3);
  for (int r = 1; r < 3; ++r) job.worlds.push_back(MustConnect(Options(r, 3, job.coordinator)));
  std::vector<std::future<bool>> joins;
  for (int r = 0; r < 3; ++r) {
    joins.push_back(
        std::async(std::launch::async, [&, r] { return job.worlds[r]->Join("a").ok(); }));
  }
  for (auto& j : joins) ASSERT_TRUE(j.get());
  job.worlds[2].reset();  // as if killed between two steps
  auto g1 = std::async(std::launch::async, [&] { return job.worlds[1]->AllGather("x"); });
  auto g0 = job.worlds[0]->AllGather("x");
  ASSERT_FALSE(g0.ok());
  EXPECT_NE(g0.status().message().find("rank 2"), std::string::npos) << g0.status().ToString();
  EXPECT_FALSE(g1.get().ok());
}

TEST(WorldTest, AHungRankIsNamedWithinTheTimeout) {
  Job job(2, 600ms);
  job.worlds.push_back(MustConnect(Options(1, 2, job.coordinator, 600ms)));
  auto j1 = std::async(std::launch::async, [&] { return job.worlds[1]->Join("a").ok(); });
  ASSERT_TRUE(job.worlds[0]->Join("a").ok());
  ASSERT_TRUE(j1.get());
  // Rank 1 never reaches the barrier.
  auto start = std::chrono::steady_clock::now();
  Status st = job.worlds[0]->Barrier();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank(s) 1 did not reach step 1"), std::string::npos)
      << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(WorldTest, StrangersCannotCrashTheCoordinator) {
  Job job(2);
  auto hp = SplitHostPort(job.coordinator);
  ASSERT_TRUE(hp.ok());
  for (const char* junk : {"[1]", "not json", R"({"type":"hello","rank":"one","token":7})",
                           R"({"type":"hello","version":1,"world_size":"2"})"}) {
    auto fd = ConnectRetry(hp->first, hp->second, DeadlineIn(5s));
    ASSERT_TRUE(fd.ok());
    TuneStream(fd->get());
    ASSERT_TRUE(WriteFrame(fd->get(), junk, DeadlineIn(5s), "test").ok());
    auto answer = ReadFrame(fd->get(), DeadlineIn(5s), "test");  // refused, then closed
    ASSERT_TRUE(answer.ok()) << junk;
    EXPECT_NE(answer->find("refused"), std::string::npos) << *answer;
  }
  job.worlds.push_back(MustConnect(Options(1, 2, job.coordinator)));
  auto j1 = std::async(std::launch::async, [&] { return job.worlds[1]->Join("a1").ok(); });
  EXPECT_TRUE(job.worlds[0]->Join("a0").ok());
  EXPECT_TRUE(j1.get());
  job.worlds[1]->Leave();
  job.worlds[0]->Leave();
}

TEST(WorldTest, EnvironmentLikeTorchrunAndIndexedJobs) {
  WorldOptions o;
  ASSERT_TRUE(ApplyEnvironment(o, {{"JOB_COMPLETION_INDEX", "3"},
                                   {"WORLD_SIZE", "8"},
                                   {"MASTER_ADDR", "bench-0.bench"},
                                   {"TOCSIN_BENCH_TOKEN", "s"}})
                  .ok());
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 8);
  EXPECT_EQ(o.coordinator, "bench-0.bench:29500");
  EXPECT_EQ(o.token, "s");
  EXPECT_TRUE(Validate(o).ok());
  WorldOptions flags;
  flags.rank = 1;
  ASSERT_TRUE(ApplyEnvironment(flags, {{"RANK", "5"}, {"WORLD_SIZE", "x"}}).code() ==
              StatusCode::kInvalidArgument);
  EXPECT_EQ(flags.rank, 1);  // flags win
  WorldOptions bad;
  bad.rank = 4;
  bad.world_size = 4;
  EXPECT_FALSE(Validate(bad).ok());
}

}  // namespace
}  // namespace tocsin::ranks
