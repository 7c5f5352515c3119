#include "testing/fault_env.h"

#include <gtest/gtest.h>

#include <atomic>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::testing {
namespace {

class FaultEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("sys/class/net/eth0/mtu", "1500\n");
    dir_.Write("sys/class/net/eth1/mtu", "9000\n");
  }
  ScopedTempDir dir_{"fault-env-test"};
  FaultEnv env_{NewRootedEnv(dir_.path())};
};

TEST_F(FaultEnvTest, PassesThroughWithoutFaults) {
  ASSERT_OK_AND_ASSIGN(std::string mtu, ReadAttribute(env_, "/sys/class/net/eth0/mtu"));
  EXPECT_EQ(mtu, "1500");
  ASSERT_OK_AND_ASSIGN(auto names, env_.ListDir("/sys/class/net"));
  EXPECT_EQ(names, (std::vector<std::string>{"eth0", "eth1"}));
  EXPECT_TRUE(env_.IsDirectory("/sys/class/net/eth0"));
  EXPECT_EQ(env_.root(), dir_.path());
  EXPECT_EQ(env_.faults_hit(), 0);
}

TEST_F(FaultEnvTest, FailsTheChosenOperationUnderThePath) {
  env_.Fail(FaultEnv::Op::kReadFile, "/sys/class/net/eth0", Status::IoError("EIO"));
  auto r = ReadAttribute(env_, "/sys/class/net/eth0/mtu");
  EXPECT_EQ(r.status().ToString(), "I/O error: EIO");
  EXPECT_OK(ReadAttribute(env_, "/sys/class/net/eth1/mtu"));  // another path
  EXPECT_OK(env_.ListDir("/sys/class/net/eth0"));             // another operation
  // A prefix of a name is not the folder: eth0 does not cover eth00.
  env_.Fail(FaultEnv::Op::kListDir, "/sys/class/ne", Status::IoError("no"));
  EXPECT_OK(env_.ListDir("/sys/class/net"));
  EXPECT_EQ(env_.faults_hit(), 1);
}

TEST_F(FaultEnvTest, FailAllAndTheHook) {
  std::atomic<int> calls{0};
  env_.SetHook([&](FaultEnv::Op, std::string_view) { ++calls; });
  env_.FailAll("/sys/class/net", Status::Timeout("hung"));
  EXPECT_FALSE(env_.ListDir("/sys/class/net").ok());
  EXPECT_FALSE(env_.ReadFile("/sys/class/net/eth1/mtu").ok());
  EXPECT_FALSE(env_.IsDirectory("/sys/class/net/eth1"));
  EXPECT_TRUE(env_.IsDirectory("/sys/class"));
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(env_.faults_hit(), 3);
}

}  // namespace
}  // namespace tocsin::testing
