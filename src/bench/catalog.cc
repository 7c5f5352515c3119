#include "bench/catalog.h"

namespace tocsin::bench {
namespace {

constexpr CheckInfo kChecks[] = {
    {kNetTransportNotRdma, Severity::kError, "", "RDMA required and the selected path is not RDMA"},
    {kNetBusbwLow, Severity::kError, "", "a test's average bus bandwidth below its floor"},
    {kNetLinkSlow, Severity::kError,
     "warning when only under the straggler ratio of the median pair",
     "a p2p pair below the floor or well under the median pair"},
    {kNetWrong, Severity::kError, "", "verification found wrong elements"},
    {kNetRankFailed, Severity::kCritical, "",
     "a rank did not join, was refused, died, hung or sent malformed results"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"net", kChecks};
  return catalog;
}

}  // namespace tocsin::bench
