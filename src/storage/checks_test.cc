#include "storage/checks.h"

#include <gtest/gtest.h>

namespace tocsin::storage {
namespace {

// An OSS: two OSTs mounted with type lustre from a block device and a ZFS dataset, as the
// mountinfo of a Lustre server shows them.
constexpr const char* kOssMountInfo =
    "22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/root rw\n"
    "40 22 253:3 / /mnt/ost0 rw,relatime shared:42 - lustre /dev/mapper/ost0 rw\n"
    "41 22 0:61 / /mnt/ost1 rw,relatime shared:43 - lustre ostpool/ost1 rw\n";

TEST(StorageChecksTest, ServerTargetMountsAreNotClientMounts) {
  Scan scan;
  scan.mounts = ParseMountInfo(kOssMountInfo);
  ASSERT_EQ(scan.mounts.mounts.size(), 3u);
  std::vector<Finding> out;
  CheckScan(scan, {}, out);
  EXPECT_TRUE(out.empty()) << out[0].message;
  auto inv = ToJson(scan);
  EXPECT_TRUE(inv["shared_mounts"].empty()) << inv.dump();
  ASSERT_EQ(inv["lustre_targets"].size(), 2u);
  EXPECT_EQ(inv["lustre_targets"][1]["source"], "ostpool/ost1");

  // A client mount beside them, with no readable import, is still unknown.
  scan.mounts.mounts.push_back({"/mnt/lustre", "lustre", "10.0.0.1@o2ib:/testfs", "rw", "/"});
  CheckScan(scan, {}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].evidence["result"], "unknown");
}

TEST(StorageChecksTest, AnUnreadableMountTableIsUnknownEvenWithNothingExpected) {
  Scan scan;
  scan.mounts_path = "/proc/self/mountinfo";
  scan.mounts_error = ReadIssue{"mountinfo", "/proc/self/mountinfo",
                                Status::IoError("larger than 4194304 bytes")};
  std::vector<Finding> out;
  CheckScan(scan, {}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].check, "storage.mount.missing");
  EXPECT_EQ(out[0].evidence["result"], "unknown");
  EXPECT_EQ(out[0].severity, Severity::kWarning);
}

LustreDevice UnreadableImport(const std::string& state_text) {
  LustreDevice d;
  d.name = "testfs-OST0003-osc-ffff8c5a4b6e9000";
  d.kind = "osc";
  d.dir = "/proc/fs/lustre/osc/" + d.name;
  d.issues.push_back({"import", d.dir + "/import", Status::IoError("Is a directory")});
  if (!state_text.empty()) d.state = *ParseLustreState(state_text);
  return d;
}

TEST(StorageChecksTest, StateFileStandsInForAnUnreadableImport) {
  Scan scan;
  scan.lustre_devices.push_back(
      UnreadableImport("current_state: DISCONN\nstate_history:\n - [ 1761000001, FULL ]\n"
                       " - [ 1764300000, DISCONN ]\n"));
  std::vector<Finding> out;
  CheckScan(scan, {}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].check, "lustre.import.state");
  EXPECT_EQ(out[0].severity, Severity::kError);
  EXPECT_EQ(out[0].evidence["state"], "DISCONN");
  EXPECT_EQ(out[0].evidence["path"], scan.lustre_devices[0].dir + "/state");
  EXPECT_NE(out[0].evidence["import_error"].get<std::string>().find("Is a directory"),
            std::string::npos);
  EXPECT_EQ(out[0].since, FromUnixSeconds(1764300000));

  // A healthy state file says what the import would have: nothing to report.
  scan.lustre_devices[0] = UnreadableImport("current_state: FULL\nstate_history:\n");
  out.clear();
  CheckScan(scan, {}, out);
  EXPECT_TRUE(out.empty());

  // Neither file: unknown, naming the import.
  scan.lustre_devices[0] = UnreadableImport("");
  CheckScan(scan, {}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].evidence["result"], "unknown");
  EXPECT_EQ(out[0].evidence["path"], scan.lustre_devices[0].dir + "/import");
}

}  // namespace
}  // namespace tocsin::storage
