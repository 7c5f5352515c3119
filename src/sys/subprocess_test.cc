#include "sys/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "testing/status_matchers.h"

namespace tocsin::sys {
namespace {

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  auto r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_OK(r);
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

// A stop (the daemon shutting down) ends the call and kills the child long before its timeout:
// the child says it runs through a FIFO, then the flag turns.
TEST(SubprocessTest, AStopKillsTheChildBeforeItsTimeout) {
  char dir[] = "/tmp/tocsin-subprocess-stop-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string fifo = std::string(dir) + "/running";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> stop{false};
  std::thread flip([&] {
    std::ifstream in(fifo);  // opens once the child opens it for writing
    std::string line;
    std::getline(in, line);
    stop = true;
  });
  ProcessOptions o;
  o.timeout = std::chrono::seconds(60);
  o.stop = &stop;
  auto r = RunProcess({"sh", "-c", "echo up > " + fifo + "; sleep 30 & sleep 30"}, o);
  flip.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("stopped"), std::string::npos);
  unlink(fifo.c_str());
  rmdir(dir);

  // Already stopped: the child is not waited for at all.
  auto again = RunProcess({"sleep", "30"}, o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kUnavailable);
}

TEST(SubprocessTest, OversizedOutputIsAnError) {
  ProcessOptions o;
  o.max_output = 1000;
  auto r = RunProcess({"sh", "-c", "head -c 100000 /dev/zero"}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than 1000 bytes"), std::string::npos);
}

// The child's stdin: 4 MiB through `cat`, which writes its stdout while it reads. Written all
// before reading (or with blocking writes) this deadlocks once both pipes are full.
TEST(SubprocessTest, InputIsWrittenWhileTheOutputIsRead) {
  ProcessOptions o;
  o.input.resize(4 << 20);
  for (size_t i = 0; i < o.input.size(); ++i) o.input[i] = static_cast<char>('a' + i % 26);
  o.max_output = 8 << 20;
  auto r = RunProcess({"cat"}, o);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_TRUE(r->out == o.input) << r->out.size() << " bytes back";
  // A line of input, and the end of file after it.
  o.input = "hello\n";
  r = RunProcess({"sh", "-c", "read x; echo \"got $x\"; read y || echo eof"}, o);
  ASSERT_OK(r);
  EXPECT_EQ(r->out, "got hello\neof\n");
}

// A child that never reads its input and exits: not an error, no SIGPIPE (this test process
// keeps the default action, which would end it).
TEST(SubprocessTest, AChildThatIgnoresItsInputIsNotAnError) {
  ProcessOptions o;
  o.input.assign(8 << 20, 'x');
  auto r = RunProcess({"sh", "-c", "exec <&-; echo done; exit 4"}, o);
  ASSERT_OK(r);
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_EQ(r->out, "done\n");
  // A child that hangs without reading is killed at the deadline as any other.
  o.timeout = std::chrono::milliseconds(200);
  r = RunProcess({"sleep", "30"}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
}

// Spawn is the one fork: a path or a PATH name, the environment given, stdout where asked.
TEST(SubprocessTest, SpawnRunsWithTheGivenEnvironmentAndDescriptors) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo $TOCSIN_SPAWN_TEST; read x || echo stdin-empty"};
  spec.env = EnvironmentWith({"TOCSIN_SPAWN_TEST=7"});
  spec.stdout_fd = out[1];
  spec.die_with_parent = true;
  auto pid = Spawn(spec);
  ::close(out[1]);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(*pid, &status, 0), *pid);
  EXPECT_EQ(got, "7\nstdin-empty\n");  // stdin is /dev/null by default
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(SubprocessTest, SpawnOfAMissingProgramIsNotFound) {
  SpawnSpec spec;
  spec.argv = {"tocsin-no-such-program-anywhere"};
  auto pid = Spawn(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pid.status().message().find("tocsin-no-such-program-anywhere"), std::string::npos);
}

TEST(SubprocessTest, EnvironmentWithReplacesAndAdds) {
  ::setenv("TOCSIN_ENV_WITH_TEST", "old", 1);
  auto env = EnvironmentWith({"TOCSIN_ENV_WITH_TEST=new", "TOCSIN_ENV_WITH_ADDED=1"});
  int old_seen = 0, new_seen = 0, added = 0;
  for (const auto& e : env) {
    old_seen += e == "TOCSIN_ENV_WITH_TEST=old";
    new_seen += e == "TOCSIN_ENV_WITH_TEST=new";
    added += e == "TOCSIN_ENV_WITH_ADDED=1";
  }
  ::unsetenv("TOCSIN_ENV_WITH_TEST");
  EXPECT_EQ(old_seen, 0);
  EXPECT_EQ(new_seen, 1);
  EXPECT_EQ(added, 1);
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
