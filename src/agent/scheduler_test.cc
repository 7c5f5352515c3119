#include "agent/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>

namespace tocsin::agent {
namespace {

using std::chrono::milliseconds;

TaskSpec Task(std::string name, std::function<Result<TaskOutput>()> run,
              milliseconds interval = milliseconds(20), milliseconds timeout = milliseconds(200)) {
  TaskSpec t;
  t.name = std::move(name);
  t.checks = {"x.check"};
  t.interval = interval;
  t.timeout = timeout;
  t.run = std::move(run);
  return t;
}

TimePoint FixedNow() { return FromUnixSeconds(1764460000); }

// The counters are shared with the runs, not borrowed from the test's frame: a run that a loaded
// machine made miss its deadline is abandoned and may still be running when the test returns.
TEST(SchedulerTest, RunsEachTaskAndKeepsItsOutput) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Scheduler s({Task("a",
                    [calls]() -> Result<TaskOutput> {
                      ++*calls;
                      TaskOutput out;
                      out.findings.push_back({"x.check", Severity::kError, "node", "bad"});
                      return out;
                    }),
               Task("b", []() -> Result<TaskOutput> { return Status::IoError("cannot read"); })},
              FixedNow);
  s.Start();
  ASSERT_TRUE(s.WaitForRuns(3, milliseconds(10000)));
  s.Stop();
  auto states = s.States();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].outcome, Outcome::kOk);
  ASSERT_TRUE(states[0].output);
  EXPECT_EQ(states[0].output->findings.size(), 1u);
  EXPECT_EQ(states[0].last_ok, FixedNow());
  EXPECT_GE(calls->load(), 3);
  EXPECT_EQ(states[1].outcome, Outcome::kError);
  EXPECT_EQ(states[1].error, "cannot read");
  EXPECT_FALSE(states[1].output);  // nothing stale to look healthy
  EXPECT_GE(states[1].errors, 3u);
}

TEST(SchedulerTest, AHungRunTimesOutThenIsStuckUntilItReturns) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto calls = std::make_shared<std::atomic<int>>(0);
  Scheduler s({Task(
                  "hang",
                  [released, calls]() -> Result<TaskOutput> {
                    if ((*calls)++ == 0) released.wait();  // the first run blocks like a hung mount
                    return TaskOutput{};
                  },
                  milliseconds(10), milliseconds(50))},
              FixedNow);
  s.Start();
  ASSERT_TRUE(s.WaitForRuns(3, milliseconds(10000)));
  auto st = s.States()[0];
  EXPECT_EQ(st.timeouts, 1u);
  EXPECT_GE(st.stuck, 2u);
  EXPECT_EQ(st.outcome, Outcome::kStuck);
  EXPECT_FALSE(st.output);
  EXPECT_EQ(calls->load(), 1);  // never a second run beside the stuck one
  release->set_value();
  // Released, the task runs again and finishes (a run can still time out on a machine slow
  // enough, under ThreadSanitizer, to outlive the 50 ms deadline: the next one is looked at).
  for (int i = 0; i < 100 && st.outcome != Outcome::kOk; ++i) {
    ASSERT_TRUE(s.WaitForRuns(st.runs + 1, milliseconds(10000)));
    st = s.States()[0];
  }
  EXPECT_EQ(st.outcome, Outcome::kOk);
  EXPECT_GE(calls->load(), 2);
  s.Stop();
}

TEST(SchedulerTest, ATimeoutStatusFromTheTaskIsATimeout) {
  Scheduler s({Task("probe", []() -> Result<TaskOutput> { return Status::Timeout("hung"); })},
              FixedNow);
  s.Start();
  ASSERT_TRUE(s.WaitForRuns(1, milliseconds(10000)));
  s.Stop();
  EXPECT_EQ(s.States()[0].outcome, Outcome::kTimeout);
  EXPECT_EQ(s.States()[0].timeouts, s.States()[0].runs);
}

TEST(SchedulerTest, StopDoesNotWaitForAStuckWorkerOrTheInterval) {
  auto never = std::make_shared<std::promise<void>>();
  std::shared_future<void> f = never->get_future().share();
  auto s = std::make_unique<Scheduler>(
      std::vector<TaskSpec>{Task(
          "stuck",
          [f]() -> Result<TaskOutput> {
            f.wait_for(std::chrono::seconds(30));  // bounded so the test binary can exit
            return TaskOutput{};
          },
          std::chrono::hours(1), std::chrono::hours(1))},
      FixedNow);
  s->Start();
  auto start = std::chrono::steady_clock::now();
  s.reset();  // Stop() while the run is in flight and its timeout is an hour away
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  never->set_value();
}

TEST(SchedulerTest, RunAllNowWakesTasksBeforeTheirInterval) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Scheduler s({Task(
                  "slow",
                  [calls]() -> Result<TaskOutput> {
                    ++*calls;
                    return TaskOutput{};
                  },
                  std::chrono::hours(1), milliseconds(1000))},
              FixedNow);
  s.Start();
  ASSERT_TRUE(s.WaitForRuns(1, milliseconds(10000)));
  s.RunAllNow();
  ASSERT_TRUE(s.WaitForRuns(2, milliseconds(10000)));
  s.Stop();
  EXPECT_EQ(calls->load(), 2);
}

}  // namespace
}  // namespace tocsin::agent
