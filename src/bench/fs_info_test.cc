#include "bench/fs_info.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/temp_dir.h"

namespace tocsin::bench {
namespace {

TEST(FsInfoTest, FsTypeNames) {
  EXPECT_EQ(FsTypeName(0x0BD00BD0), "lustre");
  EXPECT_EQ(FsTypeName(0x01021994), "tmpfs");
  EXPECT_EQ(FsTypeName(0x12345678), "0x12345678");
}

TEST(FsInfoTest, ReadsTheMountThatHoldsThePath) {
  auto env = NewRootedEnv();
  FsInfo info = ReadFsInfo(*env, "/proc/self");
  EXPECT_EQ(info.mount_point, "/proc");
  EXPECT_EQ(info.mount_type, "proc");
  EXPECT_EQ(info.striping, "not Lustre");
  EXPECT_NE(info.magic, 0u);
}

// Under a fixture root the mount table is the root's own /proc/self/mountinfo, and the path is
// resolved inside the root: the longest mount that holds it wins.
TEST(FsInfoTest, ReadsTheMountTableThroughTheEnv) {
  testing::ScopedTempDir root("fs-info");
  std::filesystem::create_directories(root.Path("lustre/scratch/run"));
  root.Write("proc/self/mountinfo",
             "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
             "90 22 0:50 / /lustre/scratch rw,relatime shared:40 - lustre 10.0.0.1@o2ib:/scratch "
             "rw,flock\n");
  auto env = NewRootedEnv(root.path());
  FsInfo info = ReadFsInfo(*env, "/lustre/scratch/run");
  EXPECT_EQ(info.mount_point, "/lustre/scratch");
  EXPECT_EQ(info.mount_type, "lustre");
  EXPECT_EQ(info.source, "10.0.0.1@o2ib:/scratch");
  EXPECT_NE(info.magic, 0u);  // statfs of the fixture folder itself
}

}  // namespace
}  // namespace tocsin::bench
