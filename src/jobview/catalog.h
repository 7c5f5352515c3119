#pragma once

#include "base/check_catalog.h"

namespace tocsin::jobview {

// The verdicts of `tocsin job` (src/jobview/verdicts.cc), also the alerts of the rules' group
// tocsin-job (deploy/agent/alerts.yaml: TocsinJobFabricFallback, TocsinJobStorageStall,
// TocsinJobNetworkStraggler).
inline constexpr char kFabricFallback[] = "job.fabric.fallback";
inline constexpr char kStorageStall[] = "job.storage.stall";
inline constexpr char kNetworkStraggler[] = "job.network.straggler";

const CheckCatalog& Catalog();

}  // namespace tocsin::jobview
