#pragma once

#include "base/check_catalog.h"

namespace tocsin::nccl {

// The nccl.* checks of `tocsin nccl` (src/nccl/analyzer_report.cc).
inline constexpr char kTransportSocket[] = "nccl.transport.socket";
inline constexpr char kTransportMixed[] = "nccl.transport.mixed";
inline constexpr char kTransportUnknown[] = "nccl.transport.unknown";
inline constexpr char kGdrAbsent[] = "nccl.gdr.absent";
inline constexpr char kInitFailed[] = "nccl.init.failed";
inline constexpr char kWarn[] = "nccl.warn";
inline constexpr char kLogNoDebug[] = "nccl.log.no-debug";
inline constexpr char kLogCapped[] = "nccl.log.capped";
inline constexpr char kEnvRisky[] = "nccl.env.risky";
inline constexpr char kBusbwLow[] = "nccl.busbw.low";
inline constexpr char kWrong[] = "nccl.wrong";

const CheckCatalog& Catalog();

}  // namespace tocsin::nccl
