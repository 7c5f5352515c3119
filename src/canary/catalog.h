#pragma once

#include "base/check_catalog.h"

namespace tocsin::canary {

// The canary.* checks (src/canary/judge.cc; canary.stale and canary.setup in src/controller).
inline constexpr char kUnschedulable[] = "canary.unschedulable";
inline constexpr char kAdmission[] = "canary.admission";
inline constexpr char kNodeAdmission[] = "canary.node-admission";
inline constexpr char kSandbox[] = "canary.sandbox";
inline constexpr char kImage[] = "canary.image";
inline constexpr char kRankFailed[] = "canary.rank-failed";
inline constexpr char kTransportNotRdma[] = "canary.transport.not-rdma";
inline constexpr char kBusbwLow[] = "canary.busbw.low";
inline constexpr char kPlacement[] = "canary.placement";
inline constexpr char kStale[] = "canary.stale";
inline constexpr char kSetup[] = "canary.setup";

const CheckCatalog& Catalog();

}  // namespace tocsin::canary
