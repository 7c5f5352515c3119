#include "sys/env.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include "testing/status_matchers.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tocsin-env-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0");
    fs::create_directories(root_ / "sys/class/infiniband");
    Write("sys/devices/pci0000:00/0000:00:01.0/numa_node", "1\n");
    Write("sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/fw_ver", "20.39.1002\n");
    fs::create_directory_symlink("../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0",
                                 root_ / "sys/class/infiniband/mlx5_0");
    fs::create_directory_symlink(
        "../../../0000:00:01.0",
        root_ / "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/device");
    // An absolute link must stay inside the root.
    fs::create_symlink("/sys/devices/pci0000:00/0000:00:01.0/numa_node", root_ / "abs_link");
    fs::create_symlink("does-not-exist", root_ / "dangling");
    fs::create_symlink("loop_b", root_ / "loop_a");
    fs::create_symlink("loop_a", root_ / "loop_b");
    env_ = NewRootedEnv(root_.string());
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }

  fs::path root_;
  std::unique_ptr<Env> env_;
};

TEST_F(EnvTest, ReadsThroughRelativeSymlinks) {
  auto v = ReadAttribute(*env_, "/sys/class/infiniband/mlx5_0/fw_ver");
  ASSERT_OK(v);
  EXPECT_EQ(*v, "20.39.1002");
  auto real = env_->RealPath("/sys/class/infiniband/mlx5_0/device");
  ASSERT_OK(real);
  EXPECT_EQ(*real, "/sys/devices/pci0000:00/0000:00:01.0");
}

TEST_F(EnvTest, AbsoluteLinksAreReRooted) {
  auto v = ReadAttribute(*env_, "/abs_link");
  ASSERT_OK(v);
  EXPECT_EQ(*v, "1");
}

TEST_F(EnvTest, DotDotStaysInRoot) {
  auto real = env_->RealPath("/../../../sys");
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(*real, "/sys");
}

TEST_F(EnvTest, ErrorsNameThePath) {
  auto missing = env_->ReadFile("/sys/class/net/eth0/speed");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/sys/class/net"), std::string::npos);

  auto dangling = env_->ReadFile("/dangling");
  ASSERT_FALSE(dangling.ok());
  EXPECT_EQ(dangling.status().code(), StatusCode::kNotFound);

  auto loop = env_->ReadFile("/loop_a");
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.status().message().find("too many levels"), std::string::npos);

  auto dir = env_->ReadFile("/sys");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kIoError);
}

TEST_F(EnvTest, OpenFileResolvesInTheRootAndRefusesNonFiles) {
  auto fd = env_->OpenFile("/abs_link");  // re-rooted, like ReadFile
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  char c = 0;
  EXPECT_EQ(::read(*fd, &c, 1), 1);
  EXPECT_EQ(c, '1');
  ::close(*fd);
  auto dir = env_->OpenFile("/sys");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("/sys: not a regular file"), std::string::npos);
  EXPECT_EQ(env_->OpenFile("/dangling").status().code(), StatusCode::kNotFound);
}

TEST_F(EnvTest, HostNameIsTheRootsOwn) {
  EXPECT_EQ(HostName(*env_), "");  // a root without one, not this machine's name
  fs::create_directories(root_ / "proc/sys/kernel");
  Write("proc/sys/kernel/hostname", "gpu-node-7\n");
  EXPECT_EQ(HostName(*env_), "gpu-node-7");
  EXPECT_FALSE(HostName(*NewRootedEnv("/")).empty());
}

TEST_F(EnvTest, ListDirSortedAndReadLink) {
  auto names = env_->ListDir("/");
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(std::is_sorted(names->begin(), names->end()));
  auto link = env_->ReadLink("/sys/class/infiniband/mlx5_0");
  ASSERT_OK(link);
  EXPECT_EQ(*link, "../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0");
  EXPECT_TRUE(env_->IsDirectory("/sys/class/infiniband/mlx5_0"));
  EXPECT_FALSE(env_->IsDirectory("/abs_link"));
}

TEST_F(EnvTest, OversizedFileIsAnErrorNotATruncation) {
  Write("big", std::string(100, 'x'));
  auto r = env_->ReadFile("/big", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("larger than 10 bytes"), std::string::npos);
}

TEST_F(EnvTest, StatFsAndRelativePathRejected) {
  EXPECT_TRUE(env_->StatFs("/sys").ok());
  EXPECT_EQ(env_->ReadFile("relative").status().code(), StatusCode::kInvalidArgument);
}

// Calls `read` on another thread and waits at most 5 s for it. On the old code (a blocking open)
// the read hangs: the FIFO is then opened for writing and closed, which ends it, so the test
// fails instead of hanging.
template <typename Fn>
auto BoundedRead(const fs::path& fifo, Fn read) {
  auto result = std::async(std::launch::async, read);
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "reading " << fifo << " blocked";
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  return result.get();
}

// Issue 13: a FIFO (or anything but a regular file) where a file is expected hung `node`,
// `nccl`, `audit --from`, --profile and --config. It is refused at once, naming the path.
TEST_F(EnvTest, AFifoOrADirectoryIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((root_ / "sys/fifo").c_str(), 0600), 0);
  auto v = BoundedRead(root_ / "sys/fifo", [&] { return env_->ReadFile("/sys/fifo"); });
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "/sys/fifo: not a regular file (a FIFO)");

  std::string fifo = (root_ / "sys/fifo").string();
  auto direct = BoundedRead(root_ / "sys/fifo", [&] { return ReadRegularFile(fifo); });
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(direct.status().message(), fifo + ": not a regular file (a FIFO)");

  auto dir = ReadRegularFile(root_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), root_.string() + ": not a regular file (a directory)");
  auto missing = ReadRegularFile(root_.string() + "/nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto fine = ReadRegularFile(root_.string() + "/sys/devices/pci0000:00/0000:00:01.0/numa_node");
  ASSERT_OK(fine);
  EXPECT_EQ(*fine, "1\n");
}

// Issue 13: an error keeps its cause, in the words of the errno: a missing file, a directory,
// a file that cannot be read; and --root names the same causes.
TEST_F(EnvTest, ErrorsKeepTheCause) {
  std::string missing = root_.string() + "/nope";
  auto m = ReadRegularFile(missing);
  EXPECT_EQ(m.status().message(), missing + ": No such file or directory");
  auto d = ReadRegularFile(root_.string());
  EXPECT_EQ(d.status().message(), root_.string() + ": not a regular file (a directory)");

  EXPECT_TRUE(CheckDirectory(root_.string()).ok());
  EXPECT_EQ(CheckDirectory(missing, "--root " + missing).message(),
            "--root " + missing + ": No such file or directory");
  std::string file = root_.string() + "/sys/devices/pci0000:00/0000:00:01.0/numa_node";
  EXPECT_EQ(CheckDirectory(file).message(), file + ": not a directory (a regular file)");
  EXPECT_EQ(CheckDirectory(file + "/x").message(), file + "/x: Not a directory");
}

// The message ReadRegularFile gives for `path`, read as this user or, as root (who reads any file
// whatever its mode), by a child that gave root up for nobody (65534).
std::string ReadDeniedMessage(const std::string& path) {
  if (::geteuid() != 0) return ReadRegularFile(path).status().message();
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string m = ::setgid(65534) == 0 && ::setuid(65534) == 0
                        ? ReadRegularFile(path).status().message()
                        : std::string("cannot become nobody: ") + std::strerror(errno);
    ssize_t n = ::write(fds[1], m.data(), m.size());
    ::_exit(n == static_cast<ssize_t>(m.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST_F(EnvTest, UnreadableFileSaysPermissionDenied) {
  Write("secret", "x\n");
  std::string path = (root_ / "secret").string();
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  EXPECT_EQ(ReadDeniedMessage(path), path + ": Permission denied");
}

}  // namespace
}  // namespace tocsin
