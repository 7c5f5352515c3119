#include "bench/storage_child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace tocsin::bench {
namespace {

namespace fs = std::filesystem;

TEST(StorageChildTest, TheChildsCodeComesBack) {
  auto code = RunInProbeChild([] { return 7; });
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 7);
}

TEST(StorageChildTest, AChildThatDiesIsAnInternalError) {
  auto code = RunInProbeChild([] {
    raise(SIGKILL);
    return 0;
  });
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kInternal);
  EXPECT_NE(code.status().message().find("signal 9"), std::string::npos) << code.status().message();
}

TEST(StorageChildTest, ASignalStopsTheProbeThroughItsFlag) {
  auto code = RunInProbeChild([] {
    StorageBenchOptions o;
    HandleProbeSignals(o);
    if (o.interrupted == nullptr || o.interrupted->load()) return 1;
    raise(SIGTERM);
    return o.interrupted->load() ? 42 : 2;
  });
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 42);
}

TEST(StorageChildTest, ASignalWhileTheRanksMeetEndsAtOnceAndRemovesTheFolder) {
  char tmpl[] = "/tmp/tocsin-child-test-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto code = RunInProbeChild([&] {
    StorageBenchOptions o;
    HandleProbeSignals(o);
    o.on_rendezvous(dir);
    raise(SIGTERM);
    return 1;  // not reached
  });
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(*code, 128 + SIGTERM);
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tocsin::bench
