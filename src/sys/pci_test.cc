#include "sys/pci.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin {
namespace {

PciLocation Loc(const std::string& path, int numa) {
  auto r = ParsePciDevicePath(path);
  EXPECT_OK(r);
  PciLocation l = r.value_or(PciLocation{});
  l.numa_node = numa;
  return l;
}

TEST(PciTest, Addresses) {
  EXPECT_TRUE(IsPciAddress("0000:18:00.0"));
  EXPECT_TRUE(IsPciAddress("10000:e1:00.1"));
  EXPECT_FALSE(IsPciAddress("0000:18:00"));
  EXPECT_FALSE(IsPciAddress("virtio2"));
  EXPECT_FALSE(IsPciAddress("0000:1g:00.0"));
}

TEST(PciTest, ParsesDeviceBelowPciFunction) {
  auto r = ParsePciDevicePath("/sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->address, "0000:00:03.0");
  EXPECT_EQ(r->host_bridge, "pci0000:00");
  auto ib = ParsePciDevicePath(
      "/sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0");
  ASSERT_TRUE(ib.ok());
  EXPECT_EQ(ib->path.size(), 4u);
  EXPECT_EQ(ib->address, "0000:13:00.0");
  EXPECT_FALSE(ParsePciDevicePath("/sys/devices/virtual/net/lo").ok());
}

TEST(PciTest, ClassifiesLikeNccl) {
  // One switch: root port 10:01.0, switch upstream 11:00.0, downstream ports 12:00.0/12:01.0.
  auto gpu = Loc("/sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0", 0);
  auto nic = Loc("/sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.0", 0);
  EXPECT_EQ(ClassifyPciPath(gpu, nic), PciPathType::kPix);
  // Two levels of switches, diverging at the top one.
  auto deep_a =
      Loc("/sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/"
          "0000:13:00.0/0000:14:00.0/0000:15:00.0",
          0);
  auto deep_b =
      Loc("/sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/"
          "0000:16:00.0/0000:17:00.0/0000:18:00.0",
          0);
  EXPECT_EQ(ClassifyPciPath(deep_a, deep_b), PciPathType::kPxb);
  // Flat VM topology: both directly on the host bridge.
  auto vm_gpu = Loc("/sys/devices/pci0000:00/0000:00:04.0", 0);
  auto vm_nic = Loc("/sys/devices/pci0000:00/0000:00:05.0", 0);
  EXPECT_EQ(ClassifyPciPath(vm_gpu, vm_nic), PciPathType::kPhb);
  // Other root complexes.
  auto same_numa = Loc("/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0);
  auto other_numa = Loc("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  EXPECT_EQ(ClassifyPciPath(gpu, same_numa), PciPathType::kNode);
  EXPECT_EQ(ClassifyPciPath(gpu, other_numa), PciPathType::kSys);
  other_numa.numa_node = -1;
  EXPECT_EQ(ClassifyPciPath(gpu, other_numa), PciPathType::kUnknown);
  EXPECT_TRUE(SharesPcieSwitch(PciPathType::kPxb));
  EXPECT_FALSE(SharesPcieSwitch(PciPathType::kPhb));
}

}  // namespace
}  // namespace tocsin
