#include "storage/catalog.h"

namespace tocsin::storage {
namespace {

constexpr CheckInfo kChecks[] = {
    {kMountMissing, Severity::kError, "", "an expected path is not a mount point"},
    {kMountType, Severity::kError, "", "mounted, but not the expected filesystem type"},
    {kLustreImportState, Severity::kError, "warning while reconnecting or recovering",
     "a Lustre OSC/MDC import not FULL or IDLE"},
    {kTimeout, Severity::kCritical, "", "a storage benchmark operation did not return in time"},
    {kThroughputLow, Severity::kError, "", "write or read throughput below its floor"},
    {kLatencyHigh, Severity::kError, "", "write+fsync or metadata p99 latency above its ceiling"},
    {kDataWrong, Severity::kError, "", "blocks read back differ from what was written"},
    {kNodeSlow, Severity::kWarning, "", "a node well under the median node of a storage benchmark"},
    {kRankFailed, Severity::kCritical, "",
     "a storage benchmark rank did not join, failed, hung or sent malformed results"},
};

}  // namespace

const CheckCatalog& Catalog() {
  static const CheckCatalog catalog{"storage", kChecks};
  return catalog;
}

}  // namespace tocsin::storage
