#pragma once

#include "base/check_catalog.h"

namespace tocsin::bench {

// The net.* checks of `tocsin bench net` (src/bench/results.cc, net_bench.cc).
inline constexpr char kNetTransportNotRdma[] = "net.transport.not-rdma";
inline constexpr char kNetBusbwLow[] = "net.busbw.low";
inline constexpr char kNetLinkSlow[] = "net.link.slow";
inline constexpr char kNetWrong[] = "net.wrong";
inline constexpr char kNetRankFailed[] = "net.rank.failed";

const CheckCatalog& Catalog();

}  // namespace tocsin::bench
