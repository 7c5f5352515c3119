#pragma once

#include <string>
#include <vector>

#include "base/finding.h"
#include "base/status.h"
#include "storage/inventory.h"

namespace tocsin::storage {

// --expect-mount PATH[:FSTYPE]: PATH must be a mount point (of FSTYPE when given).
struct MountExpectation {
  std::string path;
  std::string fstype;  // empty: any type
};
Result<MountExpectation> ParseMountExpectation(std::string_view spec);

// storage.mount.missing, storage.mount.type, lustre.import.state.
void CheckScan(const Scan& scan, const std::vector<MountExpectation>& expect,
               std::vector<Finding>& out);

}  // namespace tocsin::storage
