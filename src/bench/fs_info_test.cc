#include "bench/fs_info.h"

#include <gtest/gtest.h>

namespace tocsin::bench {
namespace {

TEST(FsInfoTest, FsTypeNames) {
  EXPECT_EQ(FsTypeName(0x0BD00BD0), "lustre");
  EXPECT_EQ(FsTypeName(0x01021994), "tmpfs");
  EXPECT_EQ(FsTypeName(0x12345678), "0x12345678");
}

TEST(FsInfoTest, ReadsTheMountThatHoldsThePath) {
  FsInfo info = ReadFsInfo("/proc/self");
  EXPECT_EQ(info.mount_point, "/proc");
  EXPECT_EQ(info.mount_type, "proc");
  EXPECT_EQ(info.striping, "not Lustre");
  EXPECT_NE(info.magic, 0u);
}

}  // namespace
}  // namespace tocsin::bench
