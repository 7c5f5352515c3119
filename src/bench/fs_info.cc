#include "bench/fs_info.h"

#include <fmt/format.h>
#include <sys/statfs.h>


#include "storage/mounts.h"
#include "sys/subprocess.h"

namespace tocsin::bench {

constexpr uint64_t kLustreMagic = 0x0BD00BD0;

std::string FsTypeName(uint64_t magic) {
  switch (magic) {
    case kLustreMagic:
      return "lustre";
    case 0xEF53:
      return "ext4/ext3/ext2";
    case 0x58465342:
      return "xfs";
    case 0x01021994:
      return "tmpfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    case 0x794C7630:
      return "overlayfs";
    case 0x9123683E:
      return "btrfs";
    case 0x47504653:
      return "gpfs";
    case 0x19830326:
      return "beegfs";
    case 0x00C36400:
      return "ceph";
    case 0x2FC12FC1:
      return "zfs";
    case 0xFE534D42:
      return "smb2";
    default:
      return fmt::format("0x{:x}", magic);
  }
}

FsInfo ReadFsInfo(Env& env, const std::string& path) {
  FsInfo info;
  if (auto sf = env.StatFs(path); sf.ok()) {
    info.magic = sf->type & 0xffffffffu;
    info.type = FsTypeName(info.magic);
  }
  auto real = env.RealPath(path);
  std::string where = real.ok() ? *real : path;
  if (auto text = env.ReadFile("/proc/self/mountinfo"); text.ok()) {
    storage::MountTable table = storage::ParseMountInfo(*text);
    if (const storage::Mount* m = storage::MountHolding(table, where)) {
      info.mount_point = m->mount_point;
      info.source = m->source;
      info.mount_type = m->fstype;
    }
  }
  if (info.magic == kLustreMagic && env.root() != "/") {
    info.striping = "lfs not run: the node is read under " + env.root();
  } else if (info.magic == kLustreMagic) {
    sys::ProcessOptions po;
    po.timeout = std::chrono::seconds(5);
    auto r = sys::RunProcess({"lfs", "getstripe", "-d", path}, po);
    info.striping = !r.ok()             ? "lfs not available: " + r.status().message()
                    : r->exit_code == 0 ? std::string(r->out)
                                        : "lfs getstripe failed: " + r->err;
  } else {
    info.striping = "not Lustre";
  }
  return info;
}

}  // namespace tocsin::bench
