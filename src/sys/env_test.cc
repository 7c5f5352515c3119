#include "sys/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "20.39.1002");
  auto real = env_->RealPath("/sys/class/infiniband/mlx5_0/device");
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  EXPECT_EQ(*real, "/sys/devices/pci0000:00/0000:00:01.0");
}

TEST_F(EnvTest, AbsoluteLinksAreReRooted) {
  auto v = ReadAttribute(*env_, "/abs_link");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
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

TEST_F(EnvTest, ListDirSortedAndReadLink) {
  auto names = env_->ListDir("/");
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(std::is_sorted(names->begin(), names->end()));
  auto link = env_->ReadLink("/sys/class/infiniband/mlx5_0");
  ASSERT_TRUE(link.ok()) << link.status().ToString();
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

}  // namespace
}  // namespace tocsin
