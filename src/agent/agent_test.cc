#include "agent/agent.h"

#include <gtest/gtest.h>

#include <future>

#include "testing/fault_env.h"
#include "testing/status_matchers.h"

namespace tocsin::agent {
namespace {

const std::string kNode = std::string(TOCSIN_SOURCE_DIR) + "/testdata/nodes/ib-healthy";

// The node as an Env whose every read waits for `gate`: a wedged driver's sysfs file, for as
// long as the test wants.
std::unique_ptr<Env> GatedEnv(const std::string& root, std::shared_future<void> gate) {
  auto env = std::make_unique<::tocsin::testing::FaultEnv>(NewRootedEnv(root));
  env->SetHook([gate](::tocsin::testing::FaultEnv::Op, std::string_view) { gate.wait(); });
  return env;
}

AgentOptions Options(std::shared_future<void> gate, std::chrono::milliseconds timeout) {
  AgentOptions o;
  o.root = kNode;
  o.kube = false;
  o.discover_timeout = timeout;
  o.discover_env = [gate](const std::string& root) { return GatedEnv(root, gate); };
  return o;
}

// Issue 13: discovery had no deadline, and a read that blocks in the kernel held the agent
// before it served anything. The scan is abandoned at its deadline (10 s by default).
TEST(AgentDiscoverTest, AHungScanIsAbandonedAtItsDeadline) {
  EXPECT_EQ(AgentOptions{}.discover_timeout, std::chrono::seconds(10));
  std::promise<void> release;
  Agent agent(Options(release.get_future().share(), std::chrono::milliseconds(100)));
  ::testing::internal::CaptureStderr();
  auto done = std::async(std::launch::async, [&] { return agent.Discover(); });
  // Far longer than the deadline: only a Discover that waits for the scan misses it.
  bool returned = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  release.set_value();  // the abandoned scan (or a Discover that waited for it) finishes
  Status st = done.get();
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(returned) << "Discover waited for a scan that did not answer";
  EXPECT_OK(st);
  EXPECT_NE(log.find("discover: root " + kNode + ": no answer within 100 ms"), std::string::npos)
      << log;
}

TEST(AgentDiscoverTest, AScanThatAnswersIsLogged) {
  std::promise<void> open;
  open.set_value();
  Agent agent(Options(open.get_future().share(), std::chrono::seconds(60)));
  ::testing::internal::CaptureStderr();
  Status st = agent.Discover();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_OK(st);
  EXPECT_NE(log.find("RDMA devices"), std::string::npos) << log;
  EXPECT_EQ(log.find("no answer"), std::string::npos) << log;
}

}  // namespace
}  // namespace tocsin::agent
