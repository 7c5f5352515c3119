#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tocsin::storage {

struct Mount {
  std::string mount_point;
  std::string fstype;
  std::string source;
  std::string options;  // per-mount options (mountinfo field 6, /proc/mounts field 4)
  std::string root;     // mountinfo only: the root of the mount within its filesystem
};

struct MountTable {
  std::vector<Mount> mounts;        // in file order: a later mount on the same point is on top
  std::vector<std::string> errors;  // "line N: why", for lines that could not be parsed
};

// Pure: /proc/self/mountinfo (proc(5)): ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE
// SOURCE SUPER_OPTS. Octal escapes (\040) are decoded.
MountTable ParseMountInfo(std::string_view text);

// Pure: /proc/mounts (fstab(5) layout): SOURCE POINT TYPE OPTS FREQ PASSNO.
MountTable ParseProcMounts(std::string_view text);

// Decodes the kernel's \ooo escapes in mount fields.
std::string UnescapeMountField(std::string_view field);

// Shared (network/parallel) filesystems: lustre, nfs, nfs4, beegfs, gpfs, wekafs, ceph/cephfs
// and FUSE filesystems other than desktop/container helpers such as fuse.lxcfs.
bool IsSharedFsType(std::string_view fstype);

// A Lustre server target: an OST or MDT mounted with type lustre (lustre_tgt in newer releases)
// from a block device or dataset. Client mounts name "MGS:/FSNAME" (liblustreapi's
// llapi_is_lustre_mnt; docs/FORMATS.md, "Lustre").
bool IsLustreTarget(const Mount& m);
// A shared filesystem this node reads and writes: IsSharedFsType and not a Lustre target.
bool IsSharedMount(const Mount& m);

// The topmost mount whose mount point is exactly `path`; nullptr when none.
const Mount* FindMount(const MountTable& table, std::string_view path);

// The mount that holds `path` (absolute, resolved): the longest mount point that is `path` or a
// folder above it; of equal ones the last listed (mounted on top). nullptr when none.
const Mount* MountHolding(const MountTable& table, std::string_view path);

}  // namespace tocsin::storage
