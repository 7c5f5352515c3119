#pragma once

#include <optional>
#include <vector>

#include "base/finding.h"
#include "gpu/inventory.h"

namespace tocsin::gpu {

// gpu.count: fewer GPUs than expected (error), more (warning), none without an expectation
// (info), or NVML seeing fewer GPUs than the PCI bus (error: a GPU the driver cannot use).
void CheckScan(const Scan& scan, std::optional<int> expected_gpus, std::vector<Finding>& out);

}  // namespace tocsin::gpu
