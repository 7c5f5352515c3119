#include "sys/subprocess.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace tocsin::sys {
namespace {

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  auto r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
}

TEST(SubprocessTest, PassesExtraEnvironment) {
  ProcessOptions o;
  o.extra_env = {"TOCSIN_SUBPROCESS_TEST=42", "HOME=/nonexistent-home"};
  auto r = RunProcess({"sh", "-c", "echo $TOCSIN_SUBPROCESS_TEST $HOME"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "42 /nonexistent-home\n");
}

TEST(SubprocessTest, MissingCommandIsNotFound) {
  auto r = RunProcess({"/nonexistent/tocsin-no-such-plugin"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("tocsin-no-such-plugin"), std::string::npos);
}

TEST(SubprocessTest, HungCommandIsKilledAtTheDeadline) {
  ProcessOptions o;
  o.timeout = std::chrono::milliseconds(200);
  // The child and its own child (which keeps the pipe open) are both killed.
  auto r = RunProcess({"sh", "-c", "sleep 30 & sleep 30"}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
  EXPECT_NE(r.status().message().find("200 ms"), std::string::npos);
}

TEST(SubprocessTest, OversizedOutputIsAnError) {
  ProcessOptions o;
  o.max_output = 1000;
  auto r = RunProcess({"sh", "-c", "head -c 100000 /dev/zero"}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than 1000 bytes"), std::string::npos);
}

TEST(SubprocessTest, ForkCallEndsWithWhatTheChildReturns) {
  auto pid = ForkCall([] { return 5; });
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
}

}  // namespace
}  // namespace tocsin::sys
