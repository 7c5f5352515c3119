#pragma once

#include "base/check_catalog.h"

namespace tocsin::gpu {

// The gpu.* checks (src/gpu/checks.cc; gpu.nic.affinity in src/node/affinity.cc).
inline constexpr char kCount[] = "gpu.count";
inline constexpr char kNvml[] = "gpu.nvml";
inline constexpr char kNicAffinity[] = "gpu.nic.affinity";

const CheckCatalog& Catalog();

}  // namespace tocsin::gpu
