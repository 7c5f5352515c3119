#include "storage/mounts.h"

#include <gtest/gtest.h>

#include "storage/checks.h"

namespace tocsin::storage {
namespace {

constexpr const char* kMountInfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
    "36 27 0:44 / /mnt/lustre rw,relatime shared:20 - lustre "
    "10.0.0.1@o2ib,10.1.0.1@tcp:10.0.0.2@o2ib:/testfs rw,flock,lazystatfs\n"
    "40 27 0:50 / /mnt/my\\040data rw master:3 unbindable - nfs4 nfs1:/export rw,vers=4.2\n"
    "41 27 0:51 / /var/lib/lxcfs rw - fuse.lxcfs lxcfs rw\n";

TEST(MountsTest, ParsesMountInfoWithOptionalFieldsAndEscapes) {
  auto t = ParseMountInfo(kMountInfo);
  EXPECT_TRUE(t.errors.empty());
  ASSERT_EQ(t.mounts.size(), 5u);
  EXPECT_EQ(t.mounts[2].fstype, "lustre");
  EXPECT_EQ(t.mounts[2].source, "10.0.0.1@o2ib,10.1.0.1@tcp:10.0.0.2@o2ib:/testfs");
  EXPECT_EQ(t.mounts[3].mount_point, "/mnt/my data");
  EXPECT_EQ(t.mounts[3].fstype, "nfs4");  // two optional fields before "-"
  ASSERT_NE(FindMount(t, "/mnt/lustre/"), nullptr);
  EXPECT_EQ(FindMount(t, "/mnt"), nullptr);
}

TEST(MountsTest, MountHoldingIsTheLongestMountPointAbove) {
  auto t = ParseMountInfo(kMountInfo);
  ASSERT_NE(MountHolding(t, "/mnt/lustre/job/ckpt"), nullptr);
  EXPECT_EQ(MountHolding(t, "/mnt/lustre/job/ckpt")->fstype, "lustre");
  EXPECT_EQ(MountHolding(t, "/mnt/lustre")->fstype, "lustre");
  EXPECT_EQ(MountHolding(t, "/mnt/lustrefs/x")->mount_point, "/");  // a prefix, not a folder
  EXPECT_EQ(MountHolding(t, "/home")->mount_point, "/");
  EXPECT_EQ(MountHolding(MountTable{}, "/home"), nullptr);
}

TEST(MountsTest, BadLinesAreReportedNotFatal) {
  auto t = ParseMountInfo("garbage line\n27 1 254:0 / / rw - ext4 /dev/vda rw\n36 27 0:44 /\n");
  EXPECT_EQ(t.mounts.size(), 1u);
  ASSERT_EQ(t.errors.size(), 2u);
  EXPECT_NE(t.errors[0].find("line 1"), std::string::npos);
  EXPECT_NE(t.errors[1].find("line 3"), std::string::npos);
}

TEST(MountsTest, ProcMountsFallback) {
  auto t = ParseProcMounts("10.0.0.1@tcp:/testfs /mnt/testfs lustre rw,flock,lazystatfs 0 0\n");
  ASSERT_EQ(t.mounts.size(), 1u);
  EXPECT_EQ(t.mounts[0].fstype, "lustre");
  EXPECT_EQ(t.mounts[0].mount_point, "/mnt/testfs");
}

TEST(MountsTest, SharedTypes) {
  for (auto t : {"lustre", "nfs", "nfs4", "beegfs", "gpfs", "wekafs", "ceph", "fuse.juicefs"}) {
    EXPECT_TRUE(IsSharedFsType(t)) << t;
  }
  for (auto t : {"ext4", "xfs", "tmpfs", "overlay", "fuse.lxcfs", "proc"}) {
    EXPECT_FALSE(IsSharedFsType(t)) << t;
  }
}

TEST(MountsTest, LustreTargetsAreNotSharedMounts) {
  Mount client{"/mnt/lustre", "lustre", "10.0.0.1@o2ib,10.1.0.1@tcp:10.0.0.2@o2ib:/testfs", "rw",
               "/"};
  Mount ost{"/mnt/ost0", "lustre", "/dev/mapper/ost0", "rw", "/"};
  Mount zfs_mdt{"/mnt/mdt0", "lustre", "mdtpool/mdt0", "rw", "/"};
  Mount tgt{"/mnt/ost1", "lustre_tgt", "/dev/sdc", "rw", "/"};
  EXPECT_FALSE(IsLustreTarget(client));
  EXPECT_TRUE(IsSharedMount(client));
  for (const Mount* m : {&ost, &zfs_mdt, &tgt}) {
    EXPECT_TRUE(IsLustreTarget(*m)) << m->source;
    EXPECT_FALSE(IsSharedMount(*m)) << m->source;
  }
}

TEST(MountsTest, MountExpectationSpecs) {
  auto a = ParseMountExpectation("/mnt/lustre/:lustre");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->path, "/mnt/lustre");
  EXPECT_EQ(a->fstype, "lustre");
  EXPECT_EQ(ParseMountExpectation("/data")->fstype, "");
  EXPECT_FALSE(ParseMountExpectation("data:nfs").ok());
  EXPECT_FALSE(ParseMountExpectation("/data:").ok());
}

}  // namespace
}  // namespace tocsin::storage
