#pragma once

#include <cstdint>
#include <string>

#include "sys/env.h"

namespace tocsin::bench {

// What holds the path a storage benchmark probes: its filesystem type (statfs), its mount, and
// on Lustre its default striping (`lfs getstripe -d`).
struct FsInfo {
  uint64_t magic = 0;  // statfs f_type; 0 when statfs failed
  std::string type;    // FsTypeName(magic)
  std::string mount_point, source, mount_type;
  std::string striping;  // Lustre's default layout, or why there is none
};

// The statfs magic's filesystem name ("lustre", "nfs", "ext4/ext3/ext2", ...), or hex.
std::string FsTypeName(uint64_t magic);

// Reads it for `path` through `env` (statfs, the path's real location, and the mount table in
// /proc/self/mountinfo). May block on a hung filesystem: call it bounded. Lustre's striping is
// asked of `lfs` only on the real root.
FsInfo ReadFsInfo(Env& env, const std::string& path);

}  // namespace tocsin::bench
