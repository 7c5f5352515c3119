#pragma once

#include "base/check_catalog.h"

namespace tocsin::storage {

// The storage.* and lustre.* checks: the node's (src/storage/checks.cc) and `bench storage`'s.
inline constexpr char kMountMissing[] = "storage.mount.missing";
inline constexpr char kMountType[] = "storage.mount.type";
inline constexpr char kLustreImportState[] = "lustre.import.state";
inline constexpr char kTimeout[] = "storage.timeout";
inline constexpr char kThroughputLow[] = "storage.throughput.low";
inline constexpr char kLatencyHigh[] = "storage.latency.high";
inline constexpr char kDataWrong[] = "storage.data.wrong";
inline constexpr char kNodeSlow[] = "storage.node.slow";
inline constexpr char kRankFailed[] = "storage.rank.failed";

const CheckCatalog& Catalog();

}  // namespace tocsin::storage
