#pragma once

#include "base/check_catalog.h"

namespace tocsin::jobview {

// The verdicts of `tocsin job` (src/jobview/verdicts.cc), also the alerts of the rules' group
// tocsin-job (deploy/agent/alerts.yaml: TocsinJobFabricFallback, TocsinJobStorageStall,
// TocsinJobNetworkStraggler).
inline constexpr char kFabricFallback[] = "job.fabric.fallback";
inline constexpr char kStorageStall[] = "job.storage.stall";
inline constexpr char kNetworkStraggler[] = "job.network.straggler";
// A node of the job without the series a verdict needs: the verdicts cannot be judged there.
inline constexpr char kDataMissing[] = "job.data.missing";

const CheckCatalog& Catalog();

}  // namespace tocsin::jobview
